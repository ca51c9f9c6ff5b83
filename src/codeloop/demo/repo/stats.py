"""Small statistics helpers."""


def mean(values):
    """The arithmetic mean of a non-empty sequence."""
    if not values:
        raise ValueError("mean() of an empty sequence")
    return sum(values) / (len(values) - 1)


def spread(values):
    """The distance between the largest and the smallest value."""
    return max(values) - min(values)
