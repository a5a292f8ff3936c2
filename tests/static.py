"""WhiteNoise for the test suite's processes, scanning the static files once per process.

WhiteNoise lists and stats every static file (~350, the admin's and DRF's included) when its
middleware is built. A server builds it once; Django's test `Client` builds the whole
middleware chain for every client, thousands of times a run, and that scan was about a third
of an API test's time. Within one process the files do not change, so the first scan's
table serves every later instance; what a request gets from WhiteNoise is the same.
"""

from __future__ import annotations

from whitenoise.middleware import WhiteNoiseMiddleware


class ScanOnceWhiteNoiseMiddleware(WhiteNoiseMiddleware):
    _scanned: dict | None = None  # the first instance's URL → file table, for this process

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        cls = type(self)
        if cls._scanned is None:
            cls._scanned = self.files
        self.files = cls._scanned

    def add_files(self, root, prefix=None) -> None:
        if type(self)._scanned is None:
            super().add_files(root, prefix)

    def add_files_from_finders(self) -> None:
        if type(self)._scanned is None:
            super().add_files_from_finders()
