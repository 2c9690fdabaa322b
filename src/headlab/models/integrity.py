"""Weights that do not match their config, or hold numbers no forward can use, refused at load.

Transformers fills a tensor the checkpoint lacks with a random initialization and drops one it has no place
for, with a log line most users never see. Scored as if whole, such a model gives head scores of a random
network under the pretrained model's name, so a load reports the tensors by name and stops instead.
"""

from __future__ import annotations

import re
from typing import Any, Iterator

import torch

from headlab.errors import HeadlabError
from headlab.models.cache import NO_REMOTE_CODE
from headlab.notices import say

#: tensors a checkpoint may lack without changing any attention pattern: BERT's pooler sits after the last
#: layer, and checkpoints saved from a masked-LM model often leave it out
NOT_ATTENTION = re.compile(r"(^|\.)pooler\.")
#: a tensor of a numbered block (``layers.7.``, ``layer.7.``, ``h.7.``): one the config has no place for means
#: the config claims fewer blocks or heads than the weights hold
IN_A_BLOCK = re.compile(r"\.\d+\.")
SHOWN = 3  # tensors named in one line


def _named(keys: list[str]) -> str:
    more = f" and {len(keys) - SHOWN} more" if len(keys) > SHOWN else ""
    return ", ".join(keys[:SHOWN]) + more


def check_loading(path: str, model: Any, info: dict[str, Any]) -> None:
    """Refuse a load whose weights and config disagree (``info``: transformers' ``output_loading_info``). A
    language-model head the checkpoint lacks (a sentence encoder saved without its MLM head) is said, not
    refused: attention never reads it, and only a loss computed through it would be meaningless."""
    mismatched = sorted(info.get("mismatched_keys") or [], key=lambda m: str(m[0]))
    if mismatched:
        name, have, want = mismatched[0][0], *(tuple(s) for s in mismatched[0][1:3])
        raise HeadlabError(f"{path}: the weights do not fit its config: {name} is {list(have)} in the weights but "
                           f"the config makes it {list(want)} ({len(mismatched)} tensor(s) differ); put the "
                           "config.json that was saved with these weights beside them")
    prefix = model.base_model_prefix + "."
    head = [k for k in info.get("missing_keys") or [] if model.base_model is not model and not k.startswith(prefix)]
    if head:
        say(f"{path}: the weights hold no language-model head ({_named(sorted(head))}); transformers initialized "
            "it at random, so attention is the checkpoint's but a loss or prediction through the head is not")
    missing = sorted(k for k in info.get("missing_keys") or [] if not NOT_ATTENTION.search(k) and k not in head)
    if missing:
        raise HeadlabError(f"{path}: the weights lack {len(missing)} tensor(s) the config needs ({_named(missing)}); "
                           "transformers would fill them at random. The config claims more layers or heads than "
                           "the weights hold, or the file is incomplete: use the complete checkpoint")
    extra = sorted(k for k in info.get("unexpected_keys") or [] if IN_A_BLOCK.search(k))
    if extra:
        raise HeadlabError(f"{path}: the weights hold {len(extra)} tensor(s) its config has no place for "
                           f"({_named(extra)}); the config claims fewer layers or heads than the weights hold: "
                           "put the config.json that was saved with these weights beside them")


def check_finite(path: str, model: Any) -> None:
    """Refuse weights holding NaN or infinity: every attention pattern downstream of them is undefined."""
    bad = [name for name, p in _weights(model) if not bool(torch.isfinite(p).all())]
    if bad:
        raise HeadlabError(f"{path}: {len(bad)} weight tensor(s) hold NaN or infinite values ({_named(bad)}); the "
                           "checkpoint is damaged or was saved after training diverged: use an earlier or intact "
                           "one")


def _weights(model: Any) -> Iterator[tuple[str, torch.Tensor]]:
    """Every parameter by name; one that a device map left on the disk (on the meta device, its module's
    accelerate hook holding where it is) is read from there, one at a time."""
    for prefix, module in model.named_modules():
        for name, p in module.named_parameters(recurse=False):
            if p.device.type == "meta" and getattr(module, "_hf_hook", None) is not None:
                p = module._hf_hook.weights_map[name]
            yield (f"{prefix}.{name}" if prefix else name), p


#: a tokenizer that knows fewer than this share of the model's embedding rows is not the model's: a folder
#: without tokenizer files gets an empty one of a few special tokens (transformers builds it without a word), and
#: every word of every text becomes the unknown token. Real tokenizers may leave a few rows unused (embeddings
#: padded to a multiple of 64 or 128), never half.
MIN_VOCAB_SHARE = 0.5


#: a given tokenizer is the model's own where at least this share of its tokens keep the ids of the model's own
#: (a re-saved or extended copy keeps nearly all; BERT's word pieces given to a Llama model keep almost none)
SAME_VOCAB_SHARE = 0.9


def check_same_vocabulary(path: str, source: str, config: Any, given: Any) -> None:
    """Refuse a ``--tokenizer`` whose vocabulary is not the model's own, where the model folder has a tokenizer of
    its own (a folder without one, the option's purpose, is judged by its size alone, :func:`check_tokenizer`)."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import AutoTokenizer

    try:
        own = AutoTokenizer.from_pretrained(path, **NO_REMOTE_CODE)
    except (OSError, ValueError, KeyError, TypeError):
        return  # no tokenizer of its own to compare with
    rows = getattr(config, "vocab_size", None) or len(own)
    if len(own) < MIN_VOCAB_SHARE * rows:
        return  # an empty stand-in built where the files are missing (check_tokenizer's case)
    mine, theirs = own.get_vocab(), given.get_vocab()
    same = sum(mine.get(t) == i for t, i in theirs.items()) / max(1, len(theirs))
    if same < SAME_VOCAB_SHARE:
        raise HeadlabError(f"--tokenizer {source}: {same:.0%} of its {len(theirs):,} tokens keep their ids in the "
                           f"model's own tokenizer ({path}), so the model would read other words than the texts "
                           "hold; leave out --tokenizer, or pass --force-tokenizer to use it anyway (the model's "
                           "name records it)")


def check_tokenizer(path: str, model: Any, tokenizer: Any) -> None:
    """Refuse a tokenizer that cannot be the model's: one of a handful of tokens for an embedding of thousands."""
    rows = model.get_input_embeddings().num_embeddings
    if len(tokenizer) < MIN_VOCAB_SHARE * rows:
        raise HeadlabError(f"{path}: its tokenizer knows {len(tokenizer)} tokens for a model of {rows} embedding "
                           "rows, so every word would read as unknown: the folder lacks its tokenizer files "
                           "(tokenizer.json, or vocab.txt / vocab.json and merges.txt); copy them in from where the "
                           "model came from")
