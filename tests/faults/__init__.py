"""Fault tests (issue #14): real servers, real dependencies broken and restored."""
