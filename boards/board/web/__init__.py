"""The board's web pages for people (SPEC §7), apart from the REST API:

- `board`: the live board, its resync fragment, the task drawer, the header controls;
- `pages`: the oversight pages — inbox, settings, agents and keys;
- `planning`: the plan page;
- `actions`: every POST form, each one a declared operation (boards.operations).
"""
