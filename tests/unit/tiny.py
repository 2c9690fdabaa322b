"""Tiny randomly initialised models for unit tests (real transformers classes, seconds to build)."""

from __future__ import annotations

import os

import torch

from headlab.models.loaded import LoadedModel, read_facts

#: where the tiny models live: cpu, or the device bench/gpu_check.sh names (HEADLAB_TEST_DEVICE=cuda) to run the
#: route parity tests on a GPU
TEST_DEVICE = os.environ.get("HEADLAB_TEST_DEVICE", "cpu")


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
    model.to(TEST_DEVICE)
    return LoadedModel(name=f"tiny-{kind}", model=model, tokenizer=None, facts=read_facts(model), source="random init")


class Slash:
    """Stands in for a tokenizer in random-token tests: token id 7 plays '/', no special tokens."""

    def __init__(self, lm: LoadedModel):
        lm.ids_containing = lambda c, bare=False: frozenset({7})  # type: ignore[method-assign]
        lm.tokenizer = type("T", (), {"sep_token_id": None, "cls_token_id": None, "bos_token_id": None,
                                      "eos_token_id": None, "pad_token_id": 0})()


_SMALL = dict(vocab_size=64, hidden_size=32, intermediate_size=64, num_hidden_layers=2, num_attention_heads=4,
              max_position_embeddings=128)
_GQA = dict(_SMALL, num_key_value_heads=2)
#: family -> (config class, settings, causal, W_O of layer {l} from the base model, W_O is a GPT-2 Conv1D).
#: The W_O paths are written here by hand, independently of headlab's adapters, for the ablation parity test.
FAMILIES: dict[str, tuple[str, dict, bool, str, bool]] = {
    "bert": ("BertConfig", _SMALL, False, "encoder.layer.{l}.attention.output.dense", False),
    "roberta": ("RobertaConfig", dict(_SMALL, pad_token_id=1), False, "encoder.layer.{l}.attention.output.dense",
                False),
    "electra": ("ElectraConfig", dict(_SMALL, embedding_size=32), False, "encoder.layer.{l}.attention.output.dense",
                False),
    "distilbert": ("DistilBertConfig", dict(vocab_size=64, dim=32, hidden_dim=64, n_layers=2, n_heads=4,
                   max_position_embeddings=128), False, "transformer.layer.{l}.attention.out_lin", False),
    "mpnet": ("MPNetConfig", dict(_SMALL, max_position_embeddings=130), False, "encoder.layer.{l}.attention.attn.o",
              False),
    "gpt2": ("GPT2Config", dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=128, bos_token_id=0,
             eos_token_id=0), True, "h.{l}.attn.c_proj", True),
    "gpt_neox": ("GPTNeoXConfig", dict(_SMALL, bos_token_id=0, eos_token_id=0), True, "layers.{l}.attention.dense",
                 False),
    "llama": ("LlamaConfig", _GQA, True, "layers.{l}.self_attn.o_proj", False),
    "mistral": ("MistralConfig", _GQA, True, "layers.{l}.self_attn.o_proj", False),
    "qwen2": ("Qwen2Config", _GQA, True, "layers.{l}.self_attn.o_proj", False),
    "qwen3": ("Qwen3Config", dict(_GQA, head_dim=8), True, "layers.{l}.self_attn.o_proj", False),
    "gemma2": ("Gemma2Config", dict(_GQA, head_dim=8, sliding_window=6, attn_logit_softcapping=2.0), True,
               "layers.{l}.self_attn.o_proj", False),
    "gemma3": ("Gemma3TextConfig", dict(_SMALL, num_key_value_heads=1, head_dim=8, sliding_window=5,
               layer_types=["sliding_attention", "full_attention"]), True, "layers.{l}.self_attn.o_proj", False),
    "phi3": ("Phi3Config", dict(_GQA, pad_token_id=0, bos_token_id=0, eos_token_id=0), True,
             "layers.{l}.self_attn.o_proj", False),
    "olmo2": ("Olmo2Config", dict(_GQA, pad_token_id=0, bos_token_id=0, eos_token_id=0), True,
              "layers.{l}.self_attn.o_proj", False),
    "phi": ("PhiConfig", dict(_SMALL, bos_token_id=0, eos_token_id=0), True, "layers.{l}.self_attn.dense", False),
    "opt": ("OPTConfig", dict(_SMALL, ffn_dim=64, word_embed_proj_dim=32, pad_token_id=1, bos_token_id=0,
            eos_token_id=0), True, "decoder.layers.{l}.self_attn.out_proj", False),
    "xlm-roberta": ("XLMRobertaConfig", dict(_SMALL, pad_token_id=1), False,
                    "encoder.layer.{l}.attention.output.dense", False),
    "camembert": ("CamembertConfig", dict(_SMALL, pad_token_id=1), False, "encoder.layer.{l}.attention.output.dense",
                  False),
    "granite": ("GraniteConfig", _GQA, True, "layers.{l}.self_attn.o_proj", False),
    "cohere": ("CohereConfig", dict(_GQA, pad_token_id=0, bos_token_id=0, eos_token_id=0), True,
               "layers.{l}.self_attn.o_proj", False),
    "stablelm": ("StableLmConfig", dict(_GQA, bos_token_id=0, eos_token_id=0), True, "layers.{l}.self_attn.o_proj",
                 False),
    "smollm3": ("SmolLM3Config", dict(_GQA, pad_token_id=0, bos_token_id=0, eos_token_id=0), True,
                "layers.{l}.self_attn.o_proj", False),
    "gpt_oss": ("GptOssConfig", dict(_GQA, head_dim=8, num_local_experts=2, num_experts_per_tok=1, sliding_window=6,
                pad_token_id=0, bos_token_id=0, eos_token_id=0), True, "layers.{l}.self_attn.o_proj", False),
    "gpt_bigcode": ("GPTBigCodeConfig", dict(vocab_size=64, n_embd=32, n_layer=2, n_head=4, n_positions=128,
                    bos_token_id=0, eos_token_id=0), True, "h.{l}.attn.c_proj", False),
}


def tiny_family(family: str, seed: int = 0) -> LoadedModel:
    """A tiny random model of ``family``: decoders with their language-model head, encoders bare."""
    import transformers
    from transformers import AutoModel, AutoModelForCausalLM

    from headlab.attention.adapters import adapter_for

    cls, settings, causal, _, _ = FAMILIES[family]
    cfg = getattr(transformers, cls)(**settings)
    torch.manual_seed(seed)
    model = (AutoModelForCausalLM if causal else AutoModel).from_config(cfg, attn_implementation="eager")
    model.eval()
    model.to(TEST_DEVICE)
    return LoadedModel(name=f"tiny-{family}", model=model, tokenizer=None, facts=read_facts(model),
                       source="random init", adapter=adapter_for(model))
