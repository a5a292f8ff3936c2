"""Live board updates (SPEC §7 "Live", STYLE.md "Realtime"):

- `render`: what a message becomes on the wire (cards, agent rows, header), made once per process;
- `consumers` + `routing`: the board websocket, joined after a membership check;
- `access`, `health`: who may keep listening; "live updates paused".

The outbox the services write to is coordination's (`boards.coordination.outbox`).
"""
