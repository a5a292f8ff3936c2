"""Reads that only the board pages need: the board's cards and columns, the inbox."""
