"""Constructed stimulus suites with marked target spans (slash contexts, controls, positions, contexts)."""

from headlab.probes.base import Stimulus, read_stimuli, spans_of, target_token_positions, to_samples, write_stimuli
from headlab.probes.suites import SUITES, contexts, controls, make_suite, positions, slash

__all__ = ["SUITES", "Stimulus", "contexts", "controls", "make_suite", "positions", "read_stimuli", "slash",
           "spans_of", "target_token_positions", "to_samples", "write_stimuli"]
