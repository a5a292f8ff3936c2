"""Reads of the coordination domain (STYLE.md selectors), one module per entity.

Every function takes the project (or a row that belongs to one), so an unscoped query cannot be
written by accident, and each protocol predicate — claimable task, open review slot, live lease,
must stop, awaiting human approval — is defined once here and called by the services, the API,
the board and `/work` alike. Selectors never import services.
"""
