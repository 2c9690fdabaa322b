"""Head ablation at the attention output projection's input (issue 4: metrics, importance, pruning to come)."""

from .heads import ablate, output_projections, parse_heads, record_head_inputs

__all__ = ["ablate", "output_projections", "parse_heads", "record_head_inputs"]
