"""Tokenizers for models trained from scratch.

``bpe:N`` trains a byte-level BPE of N tokens on the training texts (Hugging Face ``tokenizers``; deterministic
for the same texts), so every byte — `/` included — is a token and small models get a small vocabulary.
Any other value is loaded as a Hugging Face tokenizer (a named model's, e.g. ``minilm-l6``, or a path).
Special tokens of the BPE: ``<pad>`` = 0, ``<mask>`` = 1 (encoders' masked LM), ``<bos>`` = 2, added in front
of every text so decoders have a fixed first token.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Iterable

from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors, trainers

from headlab.errors import HeadlabError
from headlab.models import load
from headlab.models.cache import NO_REMOTE_CODE
from headlab.models.registry import NAMED_MODELS

SPECIALS = ("<pad>", "<mask>", "<bos>")


def train_bpe(texts: Iterable[str], vocab_size: int) -> Any:
    """A byte-level BPE (PreTrainedTokenizerFast) trained on ``texts``."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import PreTrainedTokenizerFast

    if vocab_size < 256 + len(SPECIALS):
        raise HeadlabError(f"a byte-level BPE needs at least {256 + len(SPECIALS)} tokens, not {vocab_size}")
    tok = Tokenizer(models.BPE())
    tok.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tok.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(vocab_size=vocab_size, special_tokens=list(SPECIALS), show_progress=False,
                                  initial_alphabet=pre_tokenizers.ByteLevel.alphabet())
    tok.train_from_iterator(texts, trainer)
    bos = tok.token_to_id("<bos>")
    tok.post_processor = processors.TemplateProcessing(single="<bos> $A", pair="<bos> $A $B",
                                                       special_tokens=[("<bos>", bos)])
    return PreTrainedTokenizerFast(tokenizer_object=tok, pad_token="<pad>", mask_token="<mask>",
                                   bos_token="<bos>", model_max_length=10**6)


def save_tokenizer(tokenizer: Any, folder: str | Path) -> None:
    tokenizer.save_pretrained(str(folder))


def load_tokenizer(spec_or_folder: str | Path) -> Any:
    """A tokenizer saved in a run folder, a named model's tokenizer, or any Hugging Face tokenizer."""
    # deferred: transformers takes ~0.9 s to import and only loading a model needs it
    from transformers import AutoTokenizer

    p = Path(spec_or_folder)
    if p.is_dir():
        try:
            return AutoTokenizer.from_pretrained(str(p), **NO_REMOTE_CODE)
        except (OSError, ValueError) as exc:
            raise HeadlabError(f"cannot load the tokenizer in {p}: {exc}") from None

    if str(spec_or_folder) in NAMED_MODELS:
        return load(str(spec_or_folder)).tokenizer
    try:
        return AutoTokenizer.from_pretrained(str(spec_or_folder), **NO_REMOTE_CODE)
    except (OSError, ValueError) as exc:
        raise HeadlabError(f"unknown tokenizer {spec_or_folder!r} (use bpe:N, a named model or a path)") from exc
