"""Renderers: each turns a ``ComparisonResult`` into one output, formatting only."""
