"""Analyses built on the streaming engine: characterization, the RoPE slash pattern, the claims table, comparison."""

from headlab.analysis.characterize import CharacterizeResult, characterize

__all__ = ["CharacterizeResult", "characterize"]
