"""The k-hop induction task against a port of its authors' own loop (``chsanford/hop-induction-heads``,
``InductionHopsFullSequenceTask.get_strings``), and the per-hop error and "solved" reading."""

import random

import torch

from headlab.retrieval.khop import KHopSource, KHopTask, errors, example, hops, solved


def their_hops(chars: list[int], k: int) -> list[int | None]:
    """Their string loop: rfind the character before where the last hop landed, step one right."""
    s = "".join("abcdefgh"[c] for c in chars)
    idx, cur = list(range(len(s))), s
    for _ in range(k):
        new, new_idx = "", []
        for i in range(len(s)):
            if idx[i] == -1 or (last := s[: idx[i]].rfind(cur[i])) == -1:
                new, new_idx = new + "~", new_idx + [-1]
            else:
                new, new_idx = new + s[last + 1], new_idx + [last + 1]
        cur, idx = new, new_idx
    return [None if ch == "~" else "abcdefgh".index(ch) for ch in cur]


def test_hops_equal_the_authors_loop() -> None:
    rng = random.Random(0)
    for _ in range(100):
        chars = [rng.randrange(4)]
        while len(chars) < 50:
            chars.append(rng.choice([c for c in range(4) if c != chars[-1]]))
        k = rng.randint(0, 16)
        assert hops(chars, k) == their_hops(chars, k)


def test_examples_and_batches_follow_their_layout() -> None:
    task = KHopTask(max_hops=5, seq_len=30, n_chars=4)
    ex = example(task, random.Random(1), k=2)
    assert ex["ids"][0] == 2 and len(ex["ids"]) == len(ex["labels"]) == 29 and ex["labels"][0] == task.blank
    chars = [i - task.char(0) for i in ex["ids"][1:]]
    assert all(a != b for a, b in zip(chars, chars[1:]))  # no letter twice in a row
    ids, mask, labels = KHopSource(task).batch(3, 4, seed=0)
    assert ids.shape == (4, 30) and labels.shape == (4, 29) and bool(mask.all())
    assert torch.equal(KHopSource(task).batch(3, 4, seed=0)[0], ids)  # a function of (seed, step)


def test_errors_count_character_targets_only_and_solved_reads_the_prefix() -> None:
    task = KHopTask(max_hops=2, seq_len=20, n_chars=3)
    sets = {k: [example(task, random.Random(k * 10 + i), k) for i in range(5)] for k in range(3)}

    class Copy(torch.nn.Module):  # predicts the label itself for k = 0 and 1, nothing useful for k = 2
        def forward(self, ids):
            logits = torch.zeros(*ids.shape, task.vocab_size)
            for b, row in enumerate(ids.tolist()):
                ex = next(e for k in sets for e in sets[k] if e["ids"] == row)
                for t, lab in enumerate(ex["labels"]):
                    logits[b, t, lab if ex["hops"] < 2 else task.blank] = 1.0
            return type("Out", (), {"logits": logits})()

    errs = errors(Copy(), task, sets)
    assert errs == {"0": 0.0, "1": 0.0, "2": 1.0} and solved(errs) == 1
    assert solved({"0": 0.2, "1": 0.0}) == -1
