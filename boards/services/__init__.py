"""All writes to the Liza domain (STYLE.md): one transaction each, row-locked, audited."""
