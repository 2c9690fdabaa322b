"""Formation tracking: gradient signals during training, head scores over checkpoints, phases, early prediction."""
