"""``headlab retrieval eval-llm MODEL``: can a pretrained causal LM solve the retrieval problem from a prompt?

Forms: ``assign`` and ``relatives``, free-form and multiple-choice (``-mc``, 4 options, chance 25%), at each
depth; ``n`` questions per cell (default 500), seeded; optional ``shots`` solved examples of the same form and
depth in front (from another seed). Scoring (ours):

* multiple choice: the prompt ends in ``"Answer:"``; the model's choice is the option letter (`` A``..`` D``)
  with the highest next-token logit;
* free form: the prompt gets ``" Answer:"`` appended and the greedy next token must be the first token of
  ``" " + answer`` (for a tokenizer that splits that into a bare space and the answer, as SmolLM2 does for
  digits, the prompt ends in ``" Answer: "`` and the target is the answer's first token). Values are single
  digits and the places have distinct first tokens under the model's tokenizer (checked; otherwise the cell is
  refused), so the first token decides the answer.

Each cell reports accuracy with a Wilson 95% interval; ``chance`` is 0.25 for multiple choice and
1 / (number of chains) for free form (the answer is one of the chains' ends).
"""

from __future__ import annotations

from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Iterator, Sequence

import torch

from headlab.ablation.metrics import load_for_metric
from headlab.attention.padding import pad_right
from headlab.census.stats import wilson
from headlab.errors import HeadlabError
from headlab.models import LoadedModel
from headlab.plotting import new_figure, save_figure
from headlab.progress import bar as progress_bar
from headlab.result import Result
from headlab.retrieval.llm_continuation import continuations, encode_by_length, tally
from headlab.retrieval.settings import EvalLLMSettings
from headlab.retrieval.task import PLACES, generate

#: distractor chains beside the asked one in every prompt (the task generator's default; the result records it)
N_DISTRACTORS = 2
SCORING = ("multiple choice: the prompt ends in \"Answer:\"; the model's choice is the option letter (A..D) with "
           "the highest next-token logit. Free form: the prompt gets \" Answer:\" appended and the greedy next token "
           "must be the first token of \" \" + answer (for a tokenizer that splits that into a bare space and the "
           "answer, the prompt ends in \" Answer: \" and the target is the answer's first token). Values are single "
           "digits and the places have distinct first tokens under the model's tokenizer (checked; otherwise the "
           "cell is refused), so the first token decides the answer. Continuation (cells' \"continuation\"): "
           "greedy continuation of the prompt (free form: + \" Answer:\") up to max_new tokens; its first non-blank "
           "line classified answer / distractor (another chain's end or option) / hop (a variable of the queried "
           "chain) / other-name / format by headlab.retrieval.llm_continuation; raw texts kept in \"texts\".")


def _first_token(tok: Any, text: str) -> int:
    return int(tok(" " + text, add_special_tokens=False)["input_ids"][0])


def _free_form_target(tok: Any, answer: str) -> tuple[str, int]:
    """(prompt suffix, token id the greedy next token must be). Tokenizers that split " 7" into a bare space
    and "7" (SmolLM2's digits) get the space in the prompt and the answer's own first token as the target."""
    ids = tok(" " + answer, add_special_tokens=False)["input_ids"]
    if len(ids) > 1 and not tok.decode(ids[:1]).strip():
        return " Answer: ", int(tok(answer, add_special_tokens=False)["input_ids"][0])
    return " Answer:", int(ids[0])


@contextmanager
def _fused_attention(model: Any) -> Iterator[None]:
    """Score with SDPA (nothing is captured here; eager attention is 2x slower on CPU); restored on exit."""
    previous = model.config._attn_implementation
    try:
        model.set_attn_implementation("sdpa")
    except Exception:  # an architecture without SDPA support keeps its own kernel
        yield
        return
    try:
        yield
    finally:
        model.set_attn_implementation(previous)


@torch.no_grad()
def _next_logits(loaded: LoadedModel, prompts: list[str], batch_size: int) -> torch.Tensor:
    """(N, V) next-token logits after each prompt.

    Prompts are batched by length (less padding) with right padding; only each row's last real position goes
    through the language-model head (``logits_to_keep``), which matters for Gemma's 262k-token vocabulary."""
    enc, order = encode_by_length(loaded, prompts)
    device = next(loaded.model.parameters()).device
    out = torch.empty(len(enc), 0)
    for i in range(0, len(order), batch_size):
        rows = order[i:i + batch_size]
        ids, bool_mask = pad_right([enc[r] for r in rows], loaded.pad_id)
        mask = bool_mask.long()
        last = (mask.sum(1) - 1)[:, None]  # (B, 1)
        logits = loaded.model(input_ids=ids.to(device), attention_mask=mask.to(device),
                              use_cache=False, logits_to_keep=last.to(device)).logits  # (B, 1, V)
        if out.shape[1] == 0:
            out = torch.empty(len(enc), logits.shape[-1])
        out[torch.tensor(rows)] = logits[:, -1].float().cpu()
    return out


@dataclass
class EvalLLMResult(Result):
    """``eval_llm.json``: accuracy with its Wilson interval per form and depth, and the scoring rule."""

    KIND = "eval_llm.json"
    COMPANIONS = ("eval_llm.png",)
    model: str
    shots: int
    n_distractors: int
    seed: int
    cells: list[dict[str, Any]]
    scoring: str

    def markdown(self) -> str:
        lines = [f"**{self.model}**, {self.shots}-shot, {self.n_distractors} distractor chain(s)", "",
                 "| form | depth | n | accuracy [95%] | chance | continuation [95%] |", "|---|---|---|---|---|---|"]
        for c in self.cells:
            cont = c.get("continuation")
            more = f"{cont['accuracy']:.3f} [{cont['interval'][0]:.3f}, {cont['interval'][1]:.3f}]" if cont else "-"
            lines.append(f"| {c['form']} | {c['depth']} | {c['n']} | {c['accuracy']:.3f} [{c['interval'][0]:.3f}, "
                         f"{c['interval'][1]:.3f}] | {c['chance']:.2f} | {more} |")
        return "\n".join(lines) + "\n"

    def records(self) -> list[dict[str, Any]]:
        """One row per (form, depth): accuracy, interval, chance and the continuation scoring's outcomes."""
        rows = []
        for c in self.cells:
            cont = c.get("continuation") or {}
            rows.append({"form": c["form"], "depth": c["depth"], "n": c["n"], "accuracy": c["accuracy"],
                         "lower": c["interval"][0], "upper": c["interval"][1], "chance": c["chance"],
                         "continuation_accuracy": cont.get("accuracy"),
                         **{f"continuation_{k}": v for k, v in cont.get("counts", {}).items()}})
        return rows

    def figure(self) -> Any:
        """Accuracy against depth (matplotlib figure)."""
        return eval_figure(self)


def _demo(form: str, depth: int, shots: int, seed: int, n_distractors: int) -> str:
    """The ``shots`` solved examples before every question of a cell ('' for none), drawn apart from its
    questions."""
    if not shots:
        return ""
    return " ".join(f"{e['prompt']}{'' if form.endswith('-mc') else ' Answer:'} {e['answer']}."
                    for e in generate(form, depth, shots, seed + 10**6, n_distractors=n_distractors)) + "\n"


def _check_context(loaded: LoadedModel, forms: Sequence[str], depths: Sequence[int], shots: int, seed: int,
                   n_distractors: int, continuation: int) -> None:
    """Refuse shots whose prompts are longer than the model reads, before the first question: such a prompt
    fails deep in the tokenizer or the forward, or is read past the positions the model was trained on."""
    limit = loaded.facts.max_length
    if shots >= limit:  # every shot is at least a token: no need to write them to know
        raise HeadlabError(f"--shots {shots}: {loaded.name} reads at most {limit} tokens, and each shot is many; "
                           "give far fewer shots")
    if not shots:
        return
    for form in forms:
        for d in depths:
            demo = _demo(form, d, shots, seed, n_distractors)
            question = next(iter(generate(form, d, 1, seed, n_distractors=n_distractors)))["prompt"]
            n_demo = len(loaded.tokenizer(demo)["input_ids"])
            # the answer's suffix and the continuation come after the question
            n_rest = len(loaded.tokenizer(question + " Answer:")["input_ids"]) + continuation
            if n_demo + n_rest > limit:
                fit = max(0, (limit - n_rest) * shots // n_demo)
                raise HeadlabError(f"--shots {shots}: the {form} prompt at depth {d} is about {n_demo + n_rest} "
                                   f"tokens, more than the {limit} {loaded.name} reads; at most about {fit} shots "
                                   "fit")


def eval_llm(model: str | LoadedModel, settings: EvalLLMSettings, *, progress: bool,
             device: str) -> EvalLLMResult:
    """Accuracy per form and depth by the first-token rule and, unless ``settings.continuation`` is 0, by greedy
    continuations of up to that many tokens classified by :mod:`.llm_continuation`."""
    depths, n, forms, shots = settings.depths, settings.n, settings.forms, settings.shots
    seed, batch_size, continuation = settings.seed, settings.batch_size, settings.continuation
    n_distractors = N_DISTRACTORS
    loaded = load_for_metric(model, device, settings.dtype)
    if not loaded.facts.causal:
        raise HeadlabError(f"{loaded.name} is not a causal language model")
    tok = loaded.tokenizer
    firsts = {p: _first_token(tok, p) for p in PLACES}
    if "relatives" in forms and len(set(firsts.values())) < len(PLACES):
        raise HeadlabError(f"{loaded.name}'s tokenizer gives two places the same first token; free-form scoring "
                           "of relatives would be ambiguous")
    letters = [_first_token(tok, x) for x in "ABCD"]
    _check_context(loaded, forms, depths, shots, seed, n_distractors, continuation)
    cells = []
    bar = progress_bar(len(forms) * len(depths) * n, f"eval-llm {loaded.name}", "question", progress)
    for form in forms:
        for d in depths:
            exs = list(generate(form, d, n, seed, n_distractors=n_distractors))
            demo = _demo(form, d, shots, seed, n_distractors)
            if form.endswith("-mc"):
                prompts, targets = [demo + e["prompt"] for e in exs], []
            else:
                suffix_target = [_free_form_target(tok, e["answer"]) for e in exs]
                prompts = [demo + e["prompt"] + sfx for e, (sfx, _) in zip(exs, suffix_target)]
                targets = [t for _, t in suffix_target]
            with _fused_attention(loaded.model):
                logits = _next_logits(loaded, prompts, batch_size)
            if form.endswith("-mc"):
                pick = logits[:, letters].argmax(-1)
                right = sum(int("ABCD"[int(p)] == e["answer"]) for p, e in zip(pick, exs))
                chance = 0.25
            else:
                pred = logits.argmax(-1)
                right = sum(int(int(p) == t) for p, t in zip(pred, targets))
                chance = 1 / (1 + n_distractors)
            _, lo, hi = wilson(right, n)
            cells.append({"form": form, "depth": d, "n": n, "correct": right, "accuracy": right / n,
                          "interval": [lo, hi], "chance": chance})
            if continuation:
                cells[-1]["continuation"] = _continuation_cell(loaded, exs, demo, form, batch_size, continuation)
            if bar is not None:
                bar.update(n)
    if bar is not None:
        bar.close()
    return EvalLLMResult(model=loaded.name, shots=shots, n_distractors=n_distractors, seed=seed, cells=cells,
                         scoring=SCORING)


def _continuation_cell(loaded: LoadedModel, exs: list[dict[str, Any]], demo: str, form: str, batch_size: int,
                       max_new: int) -> dict[str, Any]:
    prompts = [demo + e["prompt"] + ("" if form.endswith("-mc") else " Answer:") for e in exs]
    with _fused_attention(loaded.model):
        texts = continuations(loaded, prompts, batch_size, max_new)
    counts = tally(exs, texts)
    _, lo, hi = wilson(counts["answer"], len(exs))
    return {"max_new": max_new, "counts": counts, "accuracy": counts["answer"] / len(exs), "interval": [lo, hi],
            "texts": texts}


def plot_eval(result: EvalLLMResult, path: Any) -> None:
    save_figure(eval_figure(result), Path(path))


def eval_figure(result: EvalLLMResult) -> Any:
    """Accuracy against depth per form, with Wilson intervals, as a matplotlib figure."""
    forms = list(dict.fromkeys(c["form"] for c in result["cells"]))
    fig = new_figure(figsize=(6.5, 4))
    ax = fig.subplots()
    for f in forms:
        cs = [c for c in result["cells"] if c["form"] == f]
        d = [c["depth"] for c in cs]
        acc = [c["accuracy"] for c in cs]
        err = [[a - c["interval"][0] for a, c in zip(acc, cs)], [c["interval"][1] - a for a, c in zip(acc, cs)]]
        ax.errorbar(d, acc, yerr=err, marker="o", capsize=3, label=f)
    ax.axhline(0.25, color="grey", ls="--", lw=0.8, label="chance (multiple choice)")
    ax.set(xlabel="chain depth D", ylabel="accuracy (95% Wilson interval)", ylim=(0, 1),
           title=f"retrieval problem from a prompt — {result['model']} ({result['shots']}-shot)")
    ax.legend(fontsize=7)
    fig.tight_layout()
    return fig
