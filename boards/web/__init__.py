"""The board's web pages for people (SPEC §7), apart from the REST API:

- `access`: who may see a project's pages (the tenant 404, the role 403);
- `board`: the live board, its resync fragment, the task drawer, the header controls;
- `pages`: the oversight pages — inbox, settings, agents and keys;
- `actions`: every POST form, each one a declared operation (boards.operations).
"""
