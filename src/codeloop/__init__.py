"""codeloop: an autonomous coding agent whose every step is an event in an append-only log."""

__version__ = "0.1.0"
