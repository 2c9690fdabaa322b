"""Do slash-dominance heads form? One table from the committed results: the pretrained models (claim 1 of the full
study's claims table, the strict rule against its placebo null), the long formation study (each arm's runs, the top
`/` score any head reached, the formation claims' verdict on SDHs) and the slash-dense study (each finished run's
strict rule at every checkpoint, read by the one definition of an SDH in training, headlab.formation.sdh: a
transient row, a head passing at some checkpoint, and a stable row, a head passing at the final checkpoint; and the
runs still training). Written to results/formation/sdh_answer.md, which
docs/formation.md renders.

    python bench/studies/sdh_answer.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.display import count
from headlab.formation.claims import FormationClaimsResult
from headlab.formation.induce.measure import MeasureResult, formed_in
from headlab.formation.sdh import Formed
from headlab.head import Head
from headlab.io import read_jsonl, write_text_atomic
from headlab.result import read_json
from headlab.rulebook import label

ROOT = Path(__file__).resolve().parents[2]
RESULTS = ROOT / "results"
LONG = ("default", "long"), ("small-qk", "long/small-qk"), ("encoder", "long/encoder")


def pretrained() -> list[str]:
    claims = read_json(RESULTS / "study" / "claims" / "claims.json")
    one = next(c for c in claims["claims"] if c["id"] == 1)
    return [f"| pretrained: {m} | 1 model | {one['per_model'][m]['value']} | {label(one['per_model'][m])} |"
            for m in one["per_model"]]


def long_study() -> list[str]:
    rows = []
    for arm, folder in LONG:
        path = RESULTS / "formation" / folder / "claims" / FormationClaimsResult.KIND
        if not path.exists():
            continue
        r = FormationClaimsResult.read(path)
        stages = r.rows[0]
        st = stages["stats"] or {}
        top = max(st.get("top", []), default=float("nan"))
        rows.append(f"| long study, {arm} arm (a quarter of the windows hold `/`) | {count(len(r.runs), 'run')} of "
                    f"100,000 steps | {count(st.get('formed', 0), 'run')} with a head at mean `/` mass 0.5 "
                    f"(no strict-rule record); peak mean `/` mass "
                    f"{top:.2f} | {label(stages)} |")
    return rows


def _mass_at_pass(rec: MeasureResult, f: Formed) -> str:
    """For each passing head, its mean `/` mass where it passes against its highest where it does not: a pass at a
    checkpoint whose mean is no higher than at checkpoints that fail is three windows in a row, not a head that
    changed."""
    said = []
    for head, at in f.passing.items():
        h = Head.parse(head)
        mass = {s: rec.mass[i][h.layer][h.head] for i, s in enumerate(rec.steps)}
        rest = [m for s, m in mass.items() if s not in at]
        said.append(f"; {head}'s mean `/` mass {max(mass[s] for s in at):.2f} where it passes, up to "
                    f"{max(rest, default=float('nan')):.2f} at the {len(rest)} checkpoints where it does not")
    return "".join(said)


def dense_study() -> list[str]:
    """Per arm, the one definition's two readings (headlab.formation.sdh): runs with a head that passes the strict
    rule at some checkpoint (transient), and runs that end with one (stable), each with the heads and steps."""
    rows = []
    for arm in ("all", "dense"):
        here = RESULTS / "formation" / "sdh" / arm
        finished = sorted(p.parent for p in here.glob(f"s*/{MeasureResult.KIND}"))
        records = [MeasureResult.read(p) for p in finished]
        sdhs = [formed_in(p) for p in finished]
        runs = read_jsonl(here / "runs.jsonl") if (here / "runs.jsonl").exists() else []
        open_ = {r["seed"]: r["reached_step"] for r in runs if not r["finished"]}
        for r in records:
            open_.pop(r.seed, None)
        top = max((max(max(h) for h in r.mass[-1]) for r in records), default=None)
        peaks = ", ".join(f"seed {r.seed} {max(max(max(h) for h in m) for m in r.mass):.2f}" for r in records)
        training = ", ".join(f"seed {s} at step {n:,}" for s, n in sorted(open_.items())) or "none"
        judged = here / "claims" / FormationClaimsResult.KIND  # the formation claims on the finished runs
        verdict = label(FormationClaimsResult.read(judged).rows[0]) if judged.exists() else "not judged yet"
        evidence = f"{count(len(records), 'run')} of 100,000 steps finished; still training: {training}"
        transient = "; ".join(f"seed {r.seed}: {f.said()}{_mass_at_pass(r, f)}"
                              for r, f in zip(records, sdhs) if f is not None and f.transient) or "none"
        ever = sum(f is not None and f.transient for f in sdhs)
        end = sum(f is not None and f.stable for f in sdhs)
        rows.append(f"| slash-dense study, arm `{arm}`: transient (a head passes at some checkpoint) | {evidence} | "
                    f"{count(ever, 'run')} with a head that passes the strict rule at some checkpoint "
                    f"({transient}); peak mean `/` mass per run {peaks or '-'} | "
                    "reported, not judged: no rule reads a transient pass |")
        rows.append(f"| slash-dense study, arm `{arm}`: stable (a head passes at the final checkpoint) | {evidence} | "
                    f"{count(end, 'run')} end with a head that passes the strict rule "
                    f"({', '.join(h for f in sdhs if f is not None for h in f.final) or 'none'}); top final mean "
                    f"`/` mass {'-' if top is None else f'{top:.2f}'} | {verdict} |")
    return rows


def main() -> int:
    lines = ["| where | evidence | slash-dominance heads | verdict |", "|---|---|---|---|",
             *pretrained(), *long_study(), *dense_study()]
    text = "\n".join(lines) + "\n"
    write_text_atomic(RESULTS / "formation" / "sdh_answer.md", text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
