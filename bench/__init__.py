"""Benchmarks (run as scripts: `.venv/bin/python bench/claims.py`); not part of the product."""
