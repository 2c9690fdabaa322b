"""Tiny randomly initialised models for unit tests (real transformers classes, seconds to build)."""

from __future__ import annotations

import torch

from headlab.models.loaded import LoadedModel, read_facts


def tiny(kind: str, seed: int = 0) -> LoadedModel:
    from transformers import BertConfig, BertModel, LlamaConfig, LlamaModel, MPNetConfig, MPNetModel

    torch.manual_seed(seed)
    if kind == "llama":  # decoder, RoPE, grouped-query attention (4 heads share 2 KV heads)
        cfg = LlamaConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                          num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=128)
        model = LlamaModel(cfg)
    elif kind == "bert":
        cfg = BertConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                         num_attention_heads=4, max_position_embeddings=128)
        model = BertModel(cfg)
    elif kind == "gemma3":  # sliding-window layers (window 5) between global ones, one KV head, own scaling
        from transformers import Gemma3TextConfig, Gemma3TextModel

        cfg = Gemma3TextConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=3,
                               num_attention_heads=4, num_key_value_heads=1, head_dim=8, sliding_window=5,
                               layer_types=["sliding_attention", "full_attention", "sliding_attention"],
                               query_pre_attn_scalar=12, max_position_embeddings=128)
        model = Gemma3TextModel(cfg)
    elif kind == "gemma2":  # soft-capped attention logits: the fused kernel cannot express them
        from transformers import Gemma2Config, Gemma2Model

        cfg = Gemma2Config(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                           num_attention_heads=4, num_key_value_heads=2, head_dim=8, sliding_window=6,
                           attn_logit_softcapping=2.0, max_position_embeddings=128)
        model = Gemma2Model(cfg)
    elif kind == "mpnet":  # softmax computed inline: the dropout-hook route
        cfg = MPNetConfig(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                          num_attention_heads=4, max_position_embeddings=130)
        model = MPNetModel(cfg)
    else:
        raise ValueError(kind)
    model.set_attn_implementation("eager") if kind != "mpnet" else None
    model.eval()
    return LoadedModel(name=f"tiny-{kind}", model=model, tokenizer=None, facts=read_facts(model), source="random init")
