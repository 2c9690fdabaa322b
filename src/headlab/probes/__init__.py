"""Constructed stimulus suites with marked target spans (slash contexts, controls, positions, contexts)."""

from headlab.probes.base import Stimulus, read_jsonl, spans_of, target_token_positions, to_samples, write_jsonl
from headlab.probes.suites import SUITES, contexts, controls, make_suite, positions, slash

__all__ = ["SUITES", "Stimulus", "contexts", "controls", "make_suite", "positions", "read_jsonl", "slash",
           "spans_of", "target_token_positions", "to_samples", "write_jsonl"]
