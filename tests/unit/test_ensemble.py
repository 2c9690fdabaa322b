"""The ensemble trainer: stacked forward, each member's training and checkpoints equal its solo run's."""

import json
import random
import shutil

import pytest
import torch
from safetensors.torch import load_file

from headlab.errors import HeadlabError
from headlab.nn import stacked
from headlab.nn.transformer import ModelConfig, Transformer
from headlab.retrieval.task import minimal, solve
from headlab.retrieval.training import (
    RetrievalSource,
    RetrievalTask,
    accuracy,
    eval_set,
    retrieval_config,
    train_retrieval,
)
from headlab.retrieval.training_group import GroupMember, stacked_accuracy, train_group
from headlab.training.ensemble import Ensemble, Member

STEPS = 12


def _rel(a: torch.Tensor, b: torch.Tensor) -> float:
    return float((a - b).norm() / b.norm().clamp_min(1e-12))


@pytest.mark.parametrize("positions", ["rope", "learned", "sinusoidal"])
@pytest.mark.parametrize("tie", [True, False])
def test_stacked_forward_equals_each_models_own_forward(positions, tie):
    cfg = ModelConfig(vocab_size=40, n_layers=2, n_heads=4, d_model=32, max_length=20, positions=positions,
                      tie_embeddings=tie)
    models = []
    for s in range(3):
        torch.manual_seed(s)
        models.append(Transformer(cfg).eval())
    ids = torch.randint(0, 40, (3, 5, 17))
    with torch.no_grad():
        out = stacked.forward(cfg, stacked.stack_weights(models), ids)
        for e, m in enumerate(models):
            assert _rel(out[e], m(ids[e]).logits) < 1e-6


@pytest.fixture(scope="module")
def pair(tmp_path_factory):
    """Three members (different curricula, so one is padded; seeds; learning rates; warm-ups) trained at once,
    and each trained alone."""
    base = tmp_path_factory.mktemp("ensemble")
    members = [GroupMember(RetrievalTask(2, "chain"), base / "g0", seed=0, lr=1e-3),
               GroupMember(RetrievalTask(2, "none"), base / "g1", seed=1, lr=3e-3),
               GroupMember(RetrievalTask(2, "mixed"), base / "g2", seed=2, lr=1e-3, warmup_steps=3)]
    train_group(members, steps=STEPS, eval_every=4, eval_n=64, checkpoint_every=4, progress=False)
    for i, m in enumerate(members):
        train_retrieval(m.task, base / f"s{i}", steps=STEPS, eval_every=4, seed=m.seed, lr=m.lr,
                        warmup_steps=m.warmup_steps, checkpoint_every=4, progress=False)
    return base, members


def test_each_members_losses_and_final_weights_equal_its_solo_run(pair):
    base, members = pair
    for i in range(len(members)):
        rows = [[json.loads(x) for x in open(base / f"{k}{i}" / "metrics.jsonl")] for k in "gs"]
        assert [r["step"] for r in rows[0]] == [r["step"] for r in rows[1]] == list(range(1, STEPS + 1))
        for a, b in zip(*rows):
            assert abs(a["loss"] - b["loss"]) <= 1e-5 * abs(b["loss"])
            assert abs(a["grad_norm"] - b["grad_norm"]) <= 1e-5 * b["grad_norm"]
        wa, wb = (load_file(base / f"{k}{i}" / "final.safetensors") for k in "gs")
        assert wa.keys() == wb.keys()
        assert max(_rel(wa[k], wb[k]) for k in wb) < 1e-5
        assert max(_rel(wa[k], wb[k]) for k in wb) > 0 or i == 0  # the members did train apart from each other
    first = load_file(base / "g0" / "final.safetensors")["embed.weight"]
    assert _rel(load_file(base / "g1" / "final.safetensors")["embed.weight"], first) > 0.1


def test_member_checkpoints_hold_the_solo_optimizer_state(pair):
    base, _ = pair
    for i in range(3):
        for step in (4, STEPS):
            folder = f"checkpoints/step-{step:07d}"
            ga, sa = (load_file(base / f"{k}{i}" / folder / "optimizer.safetensors") for k in "gs")
            assert ga.keys() == sa.keys()
            # moments, unlike weights, are dominated by near-zero gradients early on: their float noise (summation
            # order of the batched kernels) shows at 1e-5, far below any difference a wrong update would make
            assert max(_rel(ga[k], sa[k]) for k in sa if "exp_avg" in k) < 1e-4
            assert all(float(ga[k]) == float(sa[k]) for k in sa if k.endswith(".step"))
            gs, ss = (json.loads((base / f"{k}{i}" / folder / "state.json").read_text()) for k in "gs")
            assert gs["optimizer"]["param_groups"] == ss["optimizer"]["param_groups"]


def test_held_out_accuracy_and_summaries_match_the_solo_runs(pair):
    base, members = pair
    for i in range(3):
        ga, sa = (json.loads((base / f"{k}{i}" / "summary.json").read_text()) for k in "gs")
        assert ga["final_accuracy"].keys() == sa["final_accuracy"].keys()
        assert ga["trained_with"] == "ensemble of 3" and "trained_with" not in sa


def test_stacked_accuracy_equals_solo_accuracy_member_by_member(tmp_path):
    tasks = [RetrievalTask(3, c) for c in ("chain", "none", "mixed")]
    members = [Member(retrieval_config(t, steps=1, seed=s), tmp_path / str(s), RetrievalSource(t))
               for s, t in enumerate(tasks)]
    ens = Ensemble(members, progress=False)
    ens.fit()
    for depth in (1, 3):
        examples = eval_set(tasks[0], 40, 5, depth)
        got = stacked_accuracy(ens, tasks, examples, batch_size=16)
        assert got == [accuracy(m.model, t, examples) for m, t in zip(members, tasks)]


def test_stacked_hops_and_the_dense_eval_rows_equal_the_solo_metric(tmp_path):
    """Dense members are asked on their own (definitions-first) prompts and scored per hop as alone; the
    answer-only member beside them keeps its shuffled prompts."""
    from headlab.retrieval.training import hop_accuracy
    from headlab.retrieval.training_group import StackedRetrievalEval, stacked_hops

    tasks = [RetrievalTask(3, "dense"), RetrievalTask(3, "dense"), RetrievalTask(3, "mixed")]
    members = [Member(retrieval_config(t, steps=1, seed=s), tmp_path / str(s), RetrievalSource(t))
               for s, t in enumerate(tasks)]
    ens = Ensemble(members, progress=False)
    ens.fit()
    examples = eval_set(tasks[0], 40, 5, 3)
    got = stacked_hops(ens, examples, batch_size=16)
    assert got == [hop_accuracy(m.model, examples) for m in members] and set(got[0]) == {"1", "2", "3"}
    group = [GroupMember(t, tmp_path / f"r{i}") for i, t in enumerate(tasks)]
    for g in group:
        g.run.mkdir()
    ev = StackedRetrievalEval(group, every=1, steps=1, n=16)
    ev.on_step(ens, 1, [0.0, 0.0, 0.0])
    rows = [json.loads((g.run / "eval.jsonl").read_text()) for g in group]
    assert "hops" in rows[0] and "hops" not in rows[2]
    assert rows[2]["accuracy"]["2"] == accuracy(members[2].model, tasks[2], ev.sets[False][2])
    assert rows[0]["accuracy"]["2"] == accuracy(members[0].model, tasks[0], ev.sets[True][2])


def test_members_must_share_the_model_and_the_optimizers_form(tmp_path):
    t = RetrievalTask(2, "chain")
    a = Member(retrieval_config(t, steps=5), tmp_path / "a", RetrievalSource(t))
    with pytest.raises(HeadlabError, match="same model config"):
        Ensemble([a, Member(retrieval_config(t, steps=5, d_model=32), tmp_path / "b", RetrievalSource(t))],
                 progress=False)
    a = Member(retrieval_config(t, steps=5), tmp_path / "c", RetrievalSource(t))
    with pytest.raises(HeadlabError, match="optim.steps differs"):
        Ensemble([a, Member(retrieval_config(t, steps=6), tmp_path / "d", RetrievalSource(t))], progress=False)


def test_a_member_folder_with_checkpoints_is_refused(pair, tmp_path):
    base, members = pair
    with pytest.raises(HeadlabError, match="already holds"):
        train_group([GroupMember(RetrievalTask(2, "chain"), base / "g0")], steps=2, progress=False)


def test_separator_layout_is_solved_and_sized():
    rng = random.Random(0)
    for depth in (1, 4):
        ex = minimal(depth, rng, separator=True)
        assert solve(ex) == ex["answer"]
        assert len(ex["tokens"]) == RetrievalTask(depth, separator=True).max_length - depth
        assert ex["tokens"][3] == 3 and ex["tokens"][-3] == 3  # <sep> after every pair


def test_solo_callbacks_run_per_member_and_agree_with_the_stacked_evaluation(tmp_path):
    from headlab.retrieval.training import RetrievalEval
    from headlab.retrieval.training_group import StackedRetrievalEval
    from headlab.training.ensemble import PerMember

    tasks = [RetrievalTask(2, c) for c in ("chain", "none")]
    runs = [tmp_path / f"m{i}" for i in range(2)]
    solo = [RetrievalEval(tmp_path / f"solo{i}", t, every=3, n=32) for i, t in enumerate(tasks)]
    for i in range(2):
        (tmp_path / f"solo{i}").mkdir()
    members = [Member(retrieval_config(t, steps=6, seed=i), r, RetrievalSource(t))
               for i, (t, r) in enumerate(zip(tasks, runs))]
    stacked_eval = StackedRetrievalEval([GroupMember(t, r) for t, r in zip(tasks, runs)], every=3, steps=6, n=32)
    Ensemble(members, callbacks=[PerMember([[c] for c in solo]), stacked_eval], progress=False).fit()
    for i in range(2):
        a = [json.loads(x) for x in (tmp_path / f"solo{i}" / "eval.jsonl").read_text().splitlines()]
        b = [json.loads(x) for x in (runs[i] / "eval.jsonl").read_text().splitlines()]
        assert [x["step"] for x in a] == [3, 6] and a == b


def test_two_members_in_one_folder_are_refused_before_anything_is_written(tmp_path):
    t = RetrievalTask(2, "chain")
    members = [Member(retrieval_config(t, steps=2, seed=s), tmp_path / "same", RetrievalSource(t)) for s in (0, 1)]
    with pytest.raises(HeadlabError, match="share the run folder"):
        Ensemble(members, progress=False)
    assert not (tmp_path / "same").exists()


def test_a_stopped_ensemble_resumes_to_the_uninterrupted_run(pair, tmp_path, monkeypatch, capsys):
    """Stopped after step 6 (its last checkpoint at step 4), then resumed: the members' logs, evaluations and final
    weights are the uninterrupted group's, and no logged row is written twice."""
    from headlab.retrieval import training_group

    base, members = pair
    again = [GroupMember(m.task, tmp_path / f"g{i}", seed=m.seed, lr=m.lr, warmup_steps=m.warmup_steps)
             for i, m in enumerate(members)]
    shape = dict(steps=STEPS, eval_every=4, eval_n=64, checkpoint_every=4, progress=False)
    real = training_group.StackedRetrievalEval.on_step

    def stop(self, ensemble, step, losses):
        real(self, ensemble, step, losses)
        if step == 6:
            raise KeyboardInterrupt

    monkeypatch.setattr(training_group.StackedRetrievalEval, "on_step", stop)
    with pytest.raises(KeyboardInterrupt):
        train_group(again, **shape)
    assert len((tmp_path / "g0" / "metrics.jsonl").read_text().splitlines()) == 6
    monkeypatch.setattr(training_group.StackedRetrievalEval, "on_step", real)
    with pytest.raises(HeadlabError, match="already holds"):  # not without asking
        train_group(again, **shape)
    done = train_group(again, resume=True, **shape)
    assert "resumed at step 4" in capsys.readouterr().err and len(done) == 3
    for i in range(3):
        for log in ("metrics.jsonl", "eval.jsonl"):
            a, b = ([json.loads(x) for x in open(root / f"g{i}" / log)] for root in (base, tmp_path))
            assert [r["step"] for r in a] == [r["step"] for r in b]
            assert all(abs(x["loss"] - y["loss"]) <= 1e-6 * abs(x["loss"]) for x, y in zip(a, b))
        wa, wb = (load_file(root / f"g{i}" / "final.safetensors") for root in (base, tmp_path))
        assert max(_rel(wb[k], wa[k]) for k in wa) < 1e-6


def test_a_resumed_ensemble_refuses_another_config(pair, tmp_path):
    base, members = pair
    again = [GroupMember(m.task, tmp_path / f"g{i}", seed=m.seed, lr=m.lr, warmup_steps=m.warmup_steps)
             for i, m in enumerate(members)]
    train_group(again, steps=4, eval_every=4, eval_n=16, checkpoint_every=4, progress=False)
    with pytest.raises(HeadlabError, match="config differs"):
        train_group(again, steps=8, eval_every=4, eval_n=16, checkpoint_every=4, resume=True, progress=False)


def test_a_sweep_resumes_a_stopped_cell_and_restarts_one_never_checkpointed(tmp_path, capsys):
    """A cell whose members all checkpointed resumes (the summary equals the uninterrupted run's); a cell without
    a checkpoint starts over."""
    from headlab.retrieval import grid
    from headlab.retrieval.settings import SWEEP

    st = SWEEP.replace(layers=(1,), depths=(2,), curricula=("dense",), seeds=(0, 1), steps=8, eval_every=4,
                       eval_n=16, checkpoint_every=4, jobs=1)
    whole = grid.sweep(tmp_path / "a", st, progress=False)
    for s in (0, 1):  # stopped after step 4: its checkpoint of step 8 and what finishing writes are gone
        run = tmp_path / "a" / f"L1-D2-dense-s{s}"
        for name in ("summary.json", "final.safetensors"):
            (run / name).unlink()

        shutil.rmtree(run / "checkpoints" / "step-0000008")
    again = grid.sweep(tmp_path / "a", st, progress=False)
    assert "resumed at step 4" in capsys.readouterr().err and again.trained_now == 2
    assert [r["final_loss"] for r in again.runs] == pytest.approx([r["final_loss"] for r in whole.runs], rel=1e-6)
