"""Head ablation at the attention output projection's input: group ablation with matched controls, exact and
gradient importance, pruning curves."""

from headlab.ablation.experiment import ablate_experiment
from headlab.ablation.heads import ablated, output_projections, parse_heads, record_head_inputs
from headlab.ablation.result import format_report

__all__ = ["ablate_experiment", "ablated", "format_report", "output_projections", "parse_heads", "record_head_inputs"]
