"""Optimisers: each takes ``fun(w, g) -> f`` (filling the gradient g) and a start point."""
