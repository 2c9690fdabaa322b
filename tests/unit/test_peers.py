"""The peers benchmark's worker: its numpy scoring of output_attentions (the formulas TransformerLens's
detection patterns define) agrees with headlab's census on the same model folder and token ids."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[2]


def _worker():
    spec = importlib.util.spec_from_file_location("peers_worker", ROOT / "bench" / "peers_worker.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)  # type: ignore[union-attr]
    return module


def _folder(tmp: Path) -> Path:
    from tokenizers import Tokenizer
    from tokenizers.models import WordLevel
    from transformers import LlamaConfig, LlamaForCausalLM, PreTrainedTokenizerFast

    torch.manual_seed(0)
    cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128, bos_token_id=1)
    LlamaForCausalLM(cfg).save_pretrained(tmp)
    vocab = {f"t{i}": i for i in range(64)}
    tok = PreTrainedTokenizerFast(tokenizer_object=Tokenizer(WordLevel(vocab, unk_token="t0")), bos_token="t1",
                                  pad_token="t0")
    tok.save_pretrained(tmp)
    return tmp


def test_the_numpy_scoring_of_the_attention_maps_equals_the_census(tmp_path: Path) -> None:
    w = _worker()
    folder = _folder(tmp_path / "model")
    rng = np.random.default_rng(0)
    ids = np.concatenate([np.ones((4, 1), dtype=np.int64), rng.integers(2, 12, (4, 39))], 1)  # many repeats
    json.dump(ids.tolist(), open(tmp_path / "ids.json", "w"))
    ours, theirs = w.run_headlab(str(folder))(ids, 3), w.run_transformers(str(folder))(ids, 3)  # batches of 3 and 1
    for d in w.DETECTORS:
        assert ours[d].shape == (4, 2, 4) and np.ptp(ours[d]) > 1e-4  # near-uniform random attention, yet not constant
        np.testing.assert_allclose(ours[d], theirs[d], atol=1e-6)
    pats = w.patterns(np.array([5, 7, 5, 7]))
    assert pats["duplicate-token"][2, 0] and pats["induction"][2, 1] and not pats["induction"][1, 1]
    assert pats["previous-token"].sum() == 3 and pats["induction"].sum() == 2
