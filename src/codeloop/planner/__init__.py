"""Plans: the steps (a small DAG) the model proposes before it works, and their progress."""
