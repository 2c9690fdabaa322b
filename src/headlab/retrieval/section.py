"""The report sections of the retrieval results: a sweep, a run's circuit analysis, an LLM evaluation."""

from __future__ import annotations

from pathlib import Path

from headlab.presenting.sections import Section, copy_figure, img, section
from headlab.retrieval.analysis import AnalyzeResult
from headlab.retrieval.grid import SweepResult, markdown
from headlab.retrieval.llm_eval import EvalLLMResult


@section("retrieval-sweep", SweepResult, 80)
def sweep_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = SweepResult.read(folder)
    g = d["grid"]
    figs = [copy_figure(folder / n, figdir, tag) for n in ("success_map.png", "learning_curves.png")
            if (folder / n).exists()]

    table = markdown(d).split("\n", 2)[2].replace("\n## ", "\n#### ")  # the title line is the section's
    lines = [
        f"Grid: layers {g['layers']} × depth {g['depths']} × curricula {g['curricula']} × seeds {g['seeds']}; "
        f"{g['steps']} steps of {g['batch_size']}, d_model {g['d_model']}, {g['n_heads']} heads, lr {g['lr']}, "
        f"{g['n_distractors']} distractor chain(s).",
        "",
        table,
        "",
        "By curriculum: " + ", ".join(f"{c} {v['successes']}/{v['runs']}" for c, v in d["by_curriculum"].items()) + ".",
        "",
    ] + [img(f, figdir, f.stem) for f in figs]
    return Section(f"Retrieval sweep — {folder.name}", "\n".join(lines), figs)


@section("retrieval-analysis", AnalyzeResult, 90, under="analyze")
def analyze_section(folder: Path, figdir: Path, tag: str) -> Section:
    text = (folder / "analyze" / "analyze.md").read_text()
    figs = (
        [copy_figure(folder / "analyze" / "circuit.png", figdir, tag)]
        if (folder / "analyze" / "circuit.png").exists()
        else []
    )
    body = "\n".join(line for line in text.splitlines() if not line.startswith("# "))
    return Section(
        f"Retrieval circuit — {folder.name}", body + "\n\n" + "\n".join(img(f, figdir, "circuit") for f in figs), figs
    )


@section("eval-llm", EvalLLMResult, 100)
def eval_llm_section(folder: Path, figdir: Path, tag: str) -> Section:
    d = EvalLLMResult.read(folder)
    figs = [copy_figure(folder / "eval_llm.png", figdir, tag)] if (folder / "eval_llm.png").exists() else []
    lines = [
        f"**{d['model']}**, {d['shots']}-shot, {d['n_distractors']} distractor chains. Scoring: {d['scoring']}",
        "",
        "| form | depth | first-token accuracy [95%] | continuation accuracy [95%] | distractor | hop | other name "
        "| format | n | chance |",
        "|---|---|---|---|---|---|---|---|---|---|",
    ]
    for c in d["cells"]:
        k = c.get("continuation")
        shares = ["–"] * 4 if k is None else [f"{k['counts'][o] / c['n']:.2f}"
                                             for o in ("distractor", "hop", "other-name", "format")]
        cont = "–" if k is None else f"{k['accuracy']:.3f} [{k['interval'][0]:.3f}, {k['interval'][1]:.3f}]"
        lines.append(f"| {c['form']} | {c['depth']} | {c['accuracy']:.3f} [{c['interval'][0]:.3f}, "
                     f"{c['interval'][1]:.3f}] | {cont} | " + " | ".join(shares) + f" | {c['n']} | {c['chance']:.2f} |")
    return Section(
        f"Retrieval from a prompt — {d['model']}",
        "\n".join(lines + [""] + [img(f, figdir, "eval") for f in figs]),
        figs,
    )
