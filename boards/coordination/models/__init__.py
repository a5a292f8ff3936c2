"""The coordination rows and their state machines (django-fsm-2), one module per part."""
