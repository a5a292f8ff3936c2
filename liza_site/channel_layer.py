"""The embedded default's channel layer: Channels' in-memory layer, its expiry sweep throttled.

Channels' `InMemoryChannelLayer` runs `_clean_expired` on every `receive` and every
`group_send`, and that sweep walks every channel's queue and every member of every group. Each
open board is a consumer waiting in `receive`, so one board event costs N receives, each
walking N channels and the 2N group memberships of N boards: quadratic in the open boards.
At 500 boards it was a third of daphne's event-loop time (bench/BOARD.md, "the embedded
default's fan-out").

Here the sweep runs at most once per `clean_every` seconds (1 s unless the layer's CONFIG says
otherwise). What it removes (messages older than `expiry`, 60 s; memberships older than
`group_expiry`, a day) is then removed up to that much later, which nothing can tell apart;
everything else is Channels' own code. (Channels' maintainers call this layer one for tests:
the embedded default is one process by design, README "HTTP server".)
"""

from __future__ import annotations

import time

from channels.layers import InMemoryChannelLayer as ChannelsInMemoryChannelLayer


class InMemoryChannelLayer(ChannelsInMemoryChannelLayer):
    def __init__(self, *args, clean_every: float = 1.0, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self.clean_every = clean_every  # seconds between two expiry sweeps
        self._next_clean = 0.0

    def _clean_expired(self) -> None:
        now = time.monotonic()
        if now < self._next_clean:
            return
        self._next_clean = now + self.clean_every
        super()._clean_expired()
