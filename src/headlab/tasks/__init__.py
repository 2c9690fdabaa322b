"""Synthetic tasks (the retrieval problem)."""
