"""Live board updates (SPEC §7 "Live", STYLE.md "Realtime"), all in one place:

- `outbox`: services note what changed; one message per transaction, sent after commit with the
  project's next sequence number (a per-project counter in Redis, or in memory);
- `render`: what a message becomes on the wire (cards, agent rows, header), made once per process;
- `consumers` + `routing`: the board websocket, joined after a membership check.
"""
