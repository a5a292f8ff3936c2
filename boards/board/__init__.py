"""Board: the people's pages (the live board, drawer, inbox, settings, agents, plan) and the
live updates (websocket, rendering). An adapter domain over coordination and watch."""
