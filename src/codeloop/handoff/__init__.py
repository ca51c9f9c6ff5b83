"""Handing a session's work back through git: a branch commit, its message, a pull request."""
