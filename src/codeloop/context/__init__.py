"""context."""
