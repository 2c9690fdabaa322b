"""Packaged real models: facts, target vocabularies, and capture parity with output_attentions=True."""

import pytest
import torch

from headlab.attention.hooks import capture

from ..support import need
from .conftest import SLASH_TEXTS, named

EXPECTED = {  # name: (layers, heads, kv heads, causal, position encoding)
    "minilm-l6": (6, 12, 12, False, "learned"),
    "smollm2-135m": (30, 9, 3, True, "rope"),
    "mpnet-base": (12, 12, 12, False, "relative"),
    "gemma3-270m": (18, 4, 1, True, "rope"),
}


@pytest.mark.integration
@pytest.mark.parametrize("name", list(EXPECTED))
def test_facts(name):
    lm = named(name)
    f = lm.facts
    assert (f.n_layers, f.n_heads, f.n_kv_heads, f.causal, f.position_encoding) == EXPECTED[name]
    assert f.max_length >= 512


@pytest.mark.integration
@pytest.mark.parametrize("name", list(EXPECTED))
def test_capture_parity_on_padded_batch(name):
    """The probabilities reducers see equal output_attentions=True within 1e-5 (padding included)."""
    lm = named(name)
    enc = lm.tokenizer(SLASH_TEXTS[:3] + ["short"], return_tensors="pt", padding=True)
    seen = {}
    with torch.inference_mode():
        ref = lm.model(**enc, output_attentions=True).attentions
        with capture(lm.model, lambda layer, p: seen.__setitem__(layer, p.clone())):
            lm.model(**enc)
    assert len(seen) == len(ref) == lm.facts.n_layers
    for layer, r in enumerate(ref):
        assert (seen[layer] - r).abs().max().item() <= 1e-5


@pytest.mark.integration
def test_slash_vocabularies():
    bert = named("minilm-l6")
    slash = bert.ids_containing("/")
    assert bert.tokenizer.convert_ids_to_tokens(sorted(slash)) == ["/", "##/"]
    smol = named("smollm2-135m")
    ids = smol.ids_containing("/")
    toks = set(smol.tokenizer.convert_ids_to_tokens(sorted(ids)))
    assert {"/", "://", "//", "</"} <= toks and len(ids) > 20
    bare = set(smol.tokenizer.convert_ids_to_tokens(sorted(smol.ids_containing("/", bare=True))))
    assert "/" in bare and "://" not in bare
    assert not (ids & smol.special_ids)


@pytest.mark.integration
@pytest.mark.parametrize("name", ["minilm-l6", "smollm2-135m"])
def test_stimulus_spans_map_to_slash_tokens(name):
    """Every target span of the slash and position suites lands on a token that contains '/'."""
    from headlab.probes import contexts, positions, slash, target_token_positions

    lm = named(name)
    slash_ids = lm.ids_containing("/")
    items = slash(28, seed=0) + positions(1, seed=0, words=8)
    for s in items:
        ids, pos = target_token_positions(lm.tokenizer, s.text, s.spans)
        assert pos, s.text
        assert all(ids[p] in slash_ids for p in pos), (s.text, [ids[p] for p in pos])
    rnd = [s for s in contexts(3, seed=0, tokenizer=lm.tokenizer) if s.meta["context"] == "random"]
    assert len(rnd) == 3 and all(s.symbols == ["/"] for s in rnd)


def test_eval_llm_scores_a_packaged_decoder(tmp_path):
    from headlab.retrieval.llm_eval import _free_form_target, eval_llm

    lm = named("smollm2-135m")
    sfx, target = _free_form_target(lm.tokenizer, "7")
    assert lm.tokenizer.decode([target]).strip() == "7"  # never the bare space SmolLM2 puts before digits
    from headlab.retrieval.settings import EvalLLMSettings

    r = eval_llm(lm if lm.model.get_output_embeddings() is not None else "smollm2-135m",
                 EvalLLMSettings(depths=(1,), n=4, forms=("assign", "assign-mc")), progress=False,
                 device="cpu")
    assert [c["form"] for c in r["cells"]] == ["assign", "assign-mc"]
    assert all(0 <= c["accuracy"] <= 1 and c["interval"][0] <= c["interval"][1] for c in r["cells"])


@pytest.mark.parametrize("name", ["smollm2-135m", "gemma3-270m"])
def test_eval_llm_reads_the_same_logits_as_a_plain_forward(name):
    """eval-llm batches prompts by length, keeps only the last position's logits and uses SDPA: the scores must
    equal a plain one-prompt eager forward's."""
    import torch

    from headlab.ablation.metrics import load_for_metric
    from headlab.retrieval.llm_eval import _fused_attention, _next_logits

    need(name)
    lm = load_for_metric(name, "cpu", "float32")
    prompts = ["A = 7. B = A. C = B. What is the value of C? Answer:", "Ann lives in Paris. Where does Ann live?",
               "Bob = 3. Answer:"]
    with _fused_attention(lm.model):
        got = _next_logits(lm, prompts, batch_size=2)
    assert lm.model.config._attn_implementation == "eager"  # restored
    with torch.no_grad():
        for p, g in zip(prompts, got):
            ids = lm.tokenizer(p, return_tensors="pt")["input_ids"]
            ref = lm.model(input_ids=ids, use_cache=False).logits[0, -1].float()
            assert torch.allclose(g, ref, atol=2e-3, rtol=1e-3), (p, (g - ref).abs().max())
            assert int(g.argmax()) == int(ref.argmax())


def test_continuations_equal_a_naive_greedy_loop_and_are_classified():
    """Batched, left-padded generation must say what a one-prompt loop of full forwards and argmax says (end of
    text barred as the first token); the cells carry the outcome counts."""
    import torch

    from headlab.ablation.metrics import load_for_metric
    from headlab.retrieval.llm_continuation import OUTCOMES, continuations
    from headlab.retrieval.llm_eval import _fused_attention, eval_llm

    need("smollm2-135m")
    lm = load_for_metric("smollm2-135m", "cpu", "float32")
    prompts = ["A = 7. B = A. C = B. What is the value of C? Answer:", "Ann lives in Paris. Where does Ann live?",
               "Bob = 3. Answer:"]
    with _fused_attention(lm.model):
        got = continuations(lm, prompts, batch_size=3, max_new=4)
    eos = lm.tokenizer.eos_token_id
    with torch.no_grad():
        for p, g in zip(prompts, got):
            ids = lm.tokenizer(p, return_tensors="pt")["input_ids"]
            new = []
            for i in range(4):
                logits = lm.model(input_ids=ids, use_cache=False).logits[0, -1].float()
                if i == 0:
                    logits[eos] = float("-inf")
                nxt = int(logits.argmax())
                if nxt == eos:
                    break
                new.append(nxt)
                ids = torch.cat([ids, torch.tensor([[nxt]])], 1)
            assert g == lm.tokenizer.decode(new, skip_special_tokens=True), (p, g)
    from headlab.retrieval.settings import EvalLLMSettings

    r = eval_llm(lm, EvalLLMSettings(depths=(1,), n=4, forms=("assign", "relatives-mc"), continuation=3),
                 progress=False, device="cpu")
    for c in r["cells"]:
        k = c["continuation"]
        assert set(k["counts"]) == set(OUTCOMES) and sum(k["counts"].values()) == 4
        assert k["accuracy"] == k["counts"]["answer"] / 4 and len(k["texts"]) == 4


def test_pattern_is_output_attentions_for_one_head():
    import numpy as np
    import torch

    import headlab

    lm = named("minilm-l6")
    text = "See https://example.org/docs/a/b for the and/or split."
    p = headlab.pattern(lm, text, "0.2")
    ids = torch.tensor([lm.tokenizer(text)["input_ids"]])
    with torch.inference_mode():
        ref = lm.model(input_ids=ids, output_attentions=True).attentions[0][0, 2].float().numpy()
    assert np.asarray(p).shape == ref.shape == (len(p.tokens), len(p.tokens))
    np.testing.assert_allclose(np.asarray(p), ref, atol=1e-6)
    assert p.tokens[0] == "[CLS]" and "<img" in p._repr_html_() and "strongest key" in p.markdown()


def test_the_pattern_command_prints_each_querys_key_and_writes_the_heatmap(tmp_path, capsys):
    import numpy as np

    import headlab
    from headlab.cli import main

    named("minilm-l6")
    text = "See a/b and c/d."
    out = tmp_path / "p.png"
    assert main(["pattern", "minilm-l6", "--head", "0.2", "--text", text, "--out", str(out)]) == 0
    printed = capsys.readouterr().out
    p = headlab.pattern("minilm-l6", text, "0.2")
    j = int(np.argmax(np.asarray(p)[1]))
    assert f"| 1 `{p.tokens[1]}` | {j} `{p.tokens[j]}` |" in printed and out.read_bytes()[:4] == b"\x89PNG"
    assert main(["pattern", "minilm-l6", "--head", "0.2", "--text", text, "--out", str(out)]) == 2  # not replaced
    assert "--overwrite" in capsys.readouterr().err
    assert main(["pattern", "minilm-l6", "--head", "0.2", "--text", text, "--out", str(tmp_path / "p.jpg")]) == 2
    assert "ending in .png" in capsys.readouterr().err
    assert len(repr(p)) < 200 and "<array" in repr(p)  # a repr names the array's shape, never prints it


def test_pattern_with_bos_is_output_attentions_on_the_bos_prefixed_tokens():
    """TransformerLens prepends BOS by default; --bos gives that input on a tokenizer that adds none."""
    import numpy as np
    import torch

    import headlab

    lm = named("smollm2-135m")
    text = "See a/b and c/d."
    ids = lm.tokenizer(text)["input_ids"]
    bos = lm.tokenizer.bos_token_id
    assert bos is not None and ids[0] != bos  # the tokenizer adds none itself
    p = headlab.pattern(lm, text, "3.1", bos=True)
    with torch.inference_mode():
        ref = lm.model(input_ids=torch.tensor([[bos, *ids]]), output_attentions=True).attentions[3][0, 1]
    assert len(p.tokens) == len(ids) + 1
    np.testing.assert_allclose(np.asarray(p), ref.float().numpy(), atol=1e-5)
    assert len(headlab.pattern(lm, text, "3.1").tokens) == len(ids)  # off by default, as scan tokenizes
    assert named("minilm-l6").tokenizer.bos_token_id is None  # BERT's starts with [CLS] and has no BOS
    with pytest.raises(headlab.HeadlabError, match="no beginning-of-sequence"):
        headlab.pattern("minilm-l6", text, "0.2", bos=True)
