"""The retrieval problem: the task and its generator (:mod:`.task`), training a decoder on it (:mod:`.training`,
several at once: :mod:`.training_group`), grids of runs (:mod:`.grid`), the circuit of a trained run
(:mod:`.analysis`), the depth law (:mod:`.law`), Sanford et al.'s k-hop task (:mod:`.khop`) and pretrained
models on its text forms (:mod:`.llm_eval`, :mod:`.llm_continuation`).

The Python twins of ``headlab retrieval generate | train | sweep | depth-law | analyze | emergence | eval-llm`` live in
:mod:`.commands` and are re-exported here (``from headlab import retrieval; retrieval.train(...)``).
"""

from headlab.retrieval.commands import analyze, depth_law, emergence, eval_llm, generate, sweep, train

__all__ = ["analyze", "depth_law", "emergence", "eval_llm", "generate", "sweep", "train"]
