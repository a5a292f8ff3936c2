"""All writes to the coordination domain (STYLE.md): one transaction each, row-locked, audited."""
