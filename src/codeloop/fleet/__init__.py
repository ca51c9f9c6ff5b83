"""Running sessions and evaluations on the workers of a Ray cluster."""
