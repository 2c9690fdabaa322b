"""Analyses built on the streaming engine: characterization, the RoPE slash pattern, the claims table, comparison."""

from .characterize import CharacterizeResult, characterize

__all__ = ["CharacterizeResult", "characterize"]
