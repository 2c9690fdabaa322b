"""The retrieval task generator, its independent solver and the training encoding."""

import json
import random

import pytest

from headlab.errors import HeadlabError
from headlab.retrieval.task import FORMS, MinimalVocab, generate, minimal, solve


@pytest.mark.parametrize("form", FORMS)
@pytest.mark.parametrize("depth", [1, 3, 6])
def test_every_generated_example_is_solved_by_the_independent_solver(form, depth):
    exs = list(generate(form, depth, 50, seed=3))
    assert all(solve(e) == e["answer"] for e in exs)
    assert len({json.dumps(e, sort_keys=True) for e in exs}) > 40  # varied, not one repeated example
    assert exs == list(generate(form, depth, 50, seed=3))  # seeded
    if form.endswith("-mc"):
        letters = [e["answer"] for e in exs]
        assert set(letters) <= set("ABCD") and len(set(letters)) > 2
        assert all(len(set(e["choices"])) == 4 for e in exs)


def test_solver_catches_a_wrong_answer_and_broken_chains():
    ex = next(generate("assign", 3, 1, seed=0))
    other = {**ex, "prompt": ex["prompt"].replace(f"= {ex['answer']}.", "= Q.")}
    with pytest.raises(HeadlabError, match="broken"):
        solve(other)
    v = MinimalVocab()
    m = minimal(4, random.Random(0), vocab=v)
    assert len(m["tokens"]) == 1 + 2 * 4 * 3 + 2 and m["tokens"][-2] == v.QUERY
    assert m["chain"][-1] == m["answer"] and len(m["chain"]) == 4
    assert all(v.is_var(t) for t in m["chain"][:-1])


def test_depth_and_size_errors():
    with pytest.raises(HeadlabError, match="variables"):
        list(generate("minimal", 10, 1, 0, vocab=MinimalVocab(n_vars=12)))
    with pytest.raises(HeadlabError, match="unknown form"):
        list(generate("nope", 2, 1, 0))


def test_curricula_encode_their_targets():
    from headlab.retrieval.training import RetrievalSource, RetrievalTask, encode

    ex = minimal(3, random.Random(1))
    seq, lab = encode(RetrievalTask(3, "chain"), ex)
    assert seq[-3:] == ex["chain"] and lab[-3:] == ex["chain"] and len(lab) == len(seq) - 1
    seq, lab = encode(RetrievalTask(3, "none"), ex)
    assert seq[-1] == ex["answer"] and [x for x in lab if x != -100] == [ex["answer"]]
    ids, mask, labels = RetrievalSource(RetrievalTask(4, "mixed")).batch(5, 32, seed=0)
    assert labels.shape == (32, ids.shape[1] - 1) and ((labels != -100).sum(1) == 1).all()
    again = RetrievalSource(RetrievalTask(4, "mixed")).batch(5, 32, seed=0)
    assert all((a == b).all() for a, b in zip((ids, mask, labels), again))


def test_circuit_emergence_counts_orders_pairwise_across_runs():
    from headlab.retrieval.analysis import circuit_emergence

    def analysis(run, labels, emerged):
        return {"run": run, "labels": labels, "emergence": {"emerged_at": emerged}}

    lab = [["ref→prev", "-"], ["query→def-ref", "ref→def-ref"]]
    t = circuit_emergence([analysis("a", lab, {"0.0": 100, "1.0": 150, "1.1": None}),
                         analysis("b", lab, {"0.0": 200, "1.0": 200, "1.1": 250}),
                         analysis("c", lab, {"0.0": 50, "1.0": 300, "1.1": 100})])
    assert t["n_runs"] == 3 and [o["types"][0] for o in t["runs"]] == ["L0:ref→prev"] * 3
    pair = {(p["a"], p["b"]): p for p in t["pairwise"]}
    p = pair[("L0:ref→prev", "L1:query→def-ref")]
    assert (p["runs"], p["a_first"], p["b_first"], p["same_step"]) == (3, 2, 0, 1)
    q = pair[("L1:query→def-ref", "L1:ref→def-ref")]  # seen together in runs b and c only
    assert (q["runs"], q["a_first"], q["b_first"]) == (2, 1, 1)


def test_continuation_outcomes_tell_format_from_retrieval_failures():
    from headlab.retrieval.llm_continuation import normalise, outcome

    ex = next(generate("assign", 3, 1, seed=1))
    queried, first = ex["path"][-1], ex["path"][0]
    other = next(n for n in ex["names"] if n not in ex["path"])
    assert normalise("\n\nA: 7.\nB = 3") == ["7"] and normalise(" :)") == [] and normalise("") == []

    def said(text):
        return outcome(ex, normalise(text))

    assert said(f" {ex['answer']}.") == said(f"\n\n{queried} = {ex['answer']}.") == "answer"
    assert said(f"The answer is {ex['answer']}") == said(f"A: {ex['answer']}") == "answer"
    assert said(f" {ex['ends'][0]}") == said(f"{queried} = {ex['ends'][0]}") == "distractor"
    assert said(f"{first} = {ex['answer']}.") == "hop"  # a copied link, not a claim about the question
    assert said(f" {queried}") == "hop" and said(f"{other} = 4") == "other-name"
    assert said(" The value is") == said("") == said("A:") == "format"
    mc = next(generate("relatives-mc", 2, 1, seed=1))
    wrong = next(x for x in "ABCD" if x != mc["answer"])
    assert outcome(mc, [mc["answer"]]) == outcome(mc, ["It", "is", mc["answer_text"]]) == "answer"
    assert outcome(mc, [wrong]) == "distractor" and outcome(mc, [mc["path"][-1]]) == "hop"
    assert outcome(mc, ["Pirates"]) == "format"


def test_dense_targets_agree_with_an_independent_left_to_right_solver() -> None:
    """Every reference of a definitions-first prompt is labelled with its variable's resolved value and hop
    count, as a solver that reads the tokens left to right finds them; every hop 1..D occurs once per chain."""
    import random

    from headlab.retrieval.task import MinimalVocab, minimal, solve, solve_dense
    from headlab.retrieval.training import RetrievalTask, encode

    for depth, sep in ((1, False), (4, False), (8, True)):
        task = RetrievalTask(depth=depth, curriculum="dense", n_distractors=2, separator=sep)
        rng = random.Random(depth)
        for _ in range(200):
            ex = task.example(rng)
            assert solve_dense(ex, task.vocab) == ex["dense"] and solve(ex, task.vocab) == ex["answer"]
            assert sorted(h for _, _, h in ex["dense"]) == sorted(list(range(1, depth + 1)) * 3)
            seq, labels = encode(task, ex)
            assert len(labels) == len(seq) - 1 and labels[-1] == ex["answer"]
            assert {(p, labels[p]) for p, _, _ in ex["dense"]} == {(p, v) for p, v, _ in ex["dense"]}
            assert sum(x != -100 for x in labels) == 3 * depth + 1  # every reference and the answer

    def used_before_defined(seed: int) -> bool:
        try:
            solve_dense(minimal(6, random.Random(seed), n_distractors=2, vocab=MinimalVocab()))
        except HeadlabError:
            return True
        return False

    assert any(used_before_defined(s) for s in range(20))  # a shuffled prompt: the solver refuses, not guesses


def test_hop_accuracy_counts_each_hop_apart() -> None:
    import random

    import torch

    from headlab.retrieval.training import RetrievalTask, hop_accuracy

    task = RetrievalTask(depth=3, curriculum="dense", n_distractors=1)
    examples = [task.example(random.Random(i)) for i in range(8)]

    class Oracle(torch.nn.Module):  # right on hop 1 and 3, wrong on hop 2
        def forward(self, ids):
            logits = torch.zeros(*ids.shape, task.vocab.size)
            for b, row in enumerate(ids.tolist()):
                ex = next(e for e in examples if e["tokens"] == row)
                for pos, value, hop in ex["dense"]:
                    logits[b, pos, value if hop != 2 else task.vocab.PAD] = 1.0
            return type("Out", (), {"logits": logits})()

    assert hop_accuracy(Oracle(), examples) == {"1": 1.0, "2": 0.0, "3": 1.0}


def test_the_init_and_an_untied_head_reach_the_model() -> None:
    from dataclasses import replace

    from headlab.nn import Transformer
    from headlab.retrieval.training import RetrievalTask, retrieval_config

    task = RetrievalTask(2, "dense", n_distractors=1)
    cfg = retrieval_config(task, init="fan-in", untied=True, d_model=128).model
    assert (cfg.init, cfg.tie_embeddings) == ("fan-in", False)
    m = Transformer(replace(cfg, vocab_size=task.vocab.size))
    plain = Transformer(replace(retrieval_config(task).model, vocab_size=task.vocab.size))
    assert m.lm_head.weight is not m.embed.weight and plain.lm_head.weight is plain.embed.weight
    assert float(m.layers[0].attn.q_proj.weight.detach().std()) == pytest.approx(128 ** -0.5, rel=0.1)
    with pytest.raises(HeadlabError, match="--init xavier"):
        retrieval_config(task, init="xavier")


def test_hop_masses_equal_a_naive_reading_of_the_attention_and_labels_need_lift() -> None:
    """hop_profile against each layer's own probabilities (the model's keep_probs path, not the capture hook),
    each referent's definition and the distractor's found by scanning the prompt; a label needs lift."""
    import numpy as np
    import torch

    from headlab.nn import ModelConfig, Transformer
    from headlab.retrieval.hops import KEYS, hop_labels, hop_profile
    from headlab.retrieval.training import RetrievalTask, eval_set

    task = RetrievalTask(3, "dense", n_distractors=1)
    torch.manual_seed(0)
    model = Transformer(ModelConfig(vocab_size=task.vocab.size, n_layers=2, n_heads=2, d_model=16,
                                    max_length=task.max_length, init="fan-in")).eval()
    exs = eval_set(task, 6, 5, 3)
    prof, control = hop_profile(model, task, exs)
    want, base, n = np.zeros((2, 2, 3, 3)), np.zeros((2, 2, 3, 3)), np.zeros((3, 3))
    for ex in exs:
        for block in model.layers:
            block.attn.keep_probs = []
        with torch.no_grad():
            model(torch.tensor([ex["tokens"]]))
        P = np.stack([block.attn.keep_probs[0][0].numpy() for block in model.layers])  # (L, H, T, T)
        toks = ex["tokens"]
        for pos, value, hop in ex["dense"]:
            want[:, :, hop - 1, 2] += P[:, :, pos, pos - 1]
            base[:, :, hop - 1, 2] += 1 / (pos + 1)
            n[hop - 1, 2] += 1
            mine = [p for p in range(1, pos - 1, 2) if toks[p] == toks[pos]]
            # the other chain's variable at the referent's place: the pair of hop - 1 with another value
            theirs = [r - 1 for r, v, k in ex["dense"] if k == hop - 1 and v != value and r < pos]
            if hop < 2 or not mine or not theirs:
                continue
            for ki, shift in ((0, 0), (1, 1)):
                want[:, :, hop - 1, ki] += P[:, :, pos, mine[0] + shift]
                base[:, :, hop - 1, ki] += P[:, :, pos, theirs[0] + shift]
                n[hop - 1, ki] += 1
    for block in model.layers:
        block.attn.keep_probs = None
    np.testing.assert_allclose(prof, want / np.where(n, n, np.nan), atol=1e-6)
    np.testing.assert_allclose(control, base / np.where(n, n, np.nan), atol=1e-6)
    assert KEYS == ("def-var", "def-ref", "prev") and np.isnan(prof[:, :, 0, :2]).all()  # hop 1: a copy
    made = np.full((1, 2, 3, 3), 0.1)
    made[0, 0, 1, 1] = 0.9  # head 0.0 reads this chain's referent's reference at hop 2
    assert hop_labels(made, np.full((1, 2, 3, 3), 0.1), min_lift=0.2) == [["ref→def-ref@2", "-"]]
    alike = made.copy()  # the same mass on the distractor's key: no lookup of this chain
    assert hop_labels(made, alike, min_lift=0.2) == [["-", "-"]]


def test_min_depth_draws_one_chain_depth_per_step_for_every_seed() -> None:
    """With ``min_depth``, a step's rows are chains of one depth in min_depth..depth (the same for every seed, so
    an ensemble's members stay equally long), depths vary over steps, and every dense label is still the solver's;
    without it every row is a full-depth chain."""
    from headlab.retrieval.task import solve_dense
    from headlab.retrieval.training import RetrievalSource, RetrievalTask

    task = RetrievalTask(6, "dense", n_distractors=1, min_depth=2)
    full = RetrievalTask(6, "dense", n_distractors=1)
    lengths = set()
    for step in range(40):
        ids, mask, labels = RetrievalSource(task).batch(step, 8, seed=0)
        other, _, _ = RetrievalSource(task).batch(step, 8, seed=3)
        assert bool(mask.all()) and ids.shape == other.shape  # one length a step, whatever the seed
        depths = set()
        for row, lab in zip(ids.tolist(), labels.tolist()):
            dense = solve_dense({"tokens": row[:-1]}, task.vocab)  # the prompt; the last token is the answer
            assert {(p, v) for p, v, _ in dense} | {(len(row) - 2, row[-1])} == {
                (p, v) for p, v in enumerate(lab) if v != -100}
            depths.add(max(h for _, _, h in dense))
        assert len(depths) == 1 and 2 <= min(depths) <= 6 and ids.shape[1] == 4 * min(depths) + 4
        lengths |= depths
    assert lengths == {2, 3, 4, 5, 6}
    assert {RetrievalSource(full).batch(s, 4, seed=0)[0].shape[1] for s in range(10)} == {4 * 6 + 4}
    with pytest.raises(HeadlabError, match="--min-depth 7"):
        RetrievalTask(6, "dense", min_depth=7)


def test_the_hop_stack_equals_zeroing_each_heads_output_columns() -> None:
    """hop_stack's per-head and per-layer losses against an independent ablation (the head's columns of o_proj's
    weight set to zero, no hook), and its carried hops follow MIN_DROP; the labels carry them."""
    import copy

    import numpy as np
    import torch

    from headlab.nn import ModelConfig, Transformer
    from headlab.retrieval.hops import KEYS
    from headlab.retrieval.stack import MIN_DROP, hop_stack, stack_markdown, stacked_labels
    from headlab.retrieval.training import RetrievalTask, eval_set, hop_accuracy

    task = RetrievalTask(3, "dense", n_distractors=1)
    torch.manual_seed(1)
    model = Transformer(ModelConfig(vocab_size=task.vocab.size, n_layers=2, n_heads=2, d_model=16,
                                    max_length=task.max_length, init="fan-in")).eval()
    exs = eval_set(task, 24, 5, 3)
    lift = np.zeros((2, 2, 3, 3))
    lift[1, 0, 2, 1] = 0.5  # at hop 3, head 1.0 reads the referent's reference
    # a stack where the base accuracy of this random model is its own: compare, not assume
    stack = hop_stack(model, exs, lift, KEYS, min_lift=0.2)
    base = hop_accuracy(model, exs)

    def zeroed(cols: dict[int, list[int]]) -> dict[str, float]:
        m = copy.deepcopy(model)
        with torch.no_grad():
            for layer, heads in cols.items():
                for h in heads:
                    m.layers[layer].attn.o_proj.weight[:, h * 8:(h + 1) * 8] = 0
        return {k: round(base[k] - v, 4) for k, v in hop_accuracy(m, exs).items()}

    for layer in range(2):
        assert stack["layers"][str(layer)] == zeroed({layer: [0, 1]})
        for h in range(2):
            assert stack["heads"][f"{layer}.{h}"] == zeroed({layer: [h]})
    for k, rows in stack["carried_by"].items():
        assert [r["head"] for r in rows] == [n for n, d in stack["heads"].items() if d[k] >= MIN_DROP]
    made = {"min_drop": MIN_DROP, "examples": 24, "base": {"1": 1.0, "2": 0.9, "3": 0.8},
            "heads": {}, "layers": {"0": {"1": 0.5, "2": 0.5, "3": 0.5}, "1": {"1": 0.0, "2": 0.0, "3": 0.3}},
            "carried_by": {"1": [], "2": [], "3": [{"head": "1.0", "drop": 0.3, "reads": "ref→def-ref"}]},
            "layers_carrying": {"1": ["0"], "2": ["0"], "3": ["0", "1"]}}
    shown = stacked_labels([["-", "-"], ["ref→def-ref@2", "-"]], made)
    assert shown == [["-", "-"], ["ref→def-ref@2 · hops 3", "-"]]
    assert "| 3 | 0.80 | 0 (0.50), 1 (0.30) | 1.0 (0.30; ref→def-ref) |" in stack_markdown(made)
