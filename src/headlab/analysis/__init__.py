"""Analyses built on the streaming engine: characterization (more to come: claims, compare, RoPE)."""

from .characterize import CharacterizeResult, characterize

__all__ = ["CharacterizeResult", "characterize"]
