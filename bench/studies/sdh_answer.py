"""Do slash-dominance heads form? One table from the committed results: the pretrained models (claim 1 of the full
study's claims table, the strict rule against its placebo null), the long formation study (each arm's runs, the top
`/` score any head reached, the formation claims' verdict on SDHs) and the slash-dense study (each finished run's
strict rule at every checkpoint, and the runs still training). Written to results/formation/sdh_answer.md, which
docs/formation.md renders.

    python bench/studies/sdh_answer.py
"""

from __future__ import annotations

import sys
from pathlib import Path

from headlab.display import count
from headlab.formation.claims import FormationClaimsResult
from headlab.formation.induce.measure import MeasureResult
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
                    f"100,000 steps | {count(st.get('formed', 0), 'run')} with a head at `/` mass 0.5; peak `/` mass "
                    f"{top:.2f} | {label(stages)} |")
    return rows


def dense_study() -> list[str]:
    rows = []
    for arm in ("all", "dense"):
        here = RESULTS / "formation" / "sdh" / arm
        finished = sorted(here.glob(f"s*/{MeasureResult.KIND}"))
        records = [MeasureResult.read(p) for p in finished]
        runs = read_jsonl(here / "runs.jsonl") if (here / "runs.jsonl").exists() else []
        open_ = {r["seed"]: r["reached_step"] for r in runs if not r["finished"]}
        for r in records:
            open_.pop(r.seed, None)
        passing = [r for r in records if r.final_pass_heads]
        top = max((max(max(h) for h in r.mass[-1]) for r in records), default=None)
        peaks = ", ".join(f"seed {r.seed} {max(max(max(h) for h in m) for m in r.mass):.2f}" for r in records)
        training = ", ".join(f"seed {s} at step {n:,}" for s, n in sorted(open_.items())) or "none"
        judged = here / "claims" / FormationClaimsResult.KIND  # the formation claims on the finished runs
        verdict = label(FormationClaimsResult.read(judged).rows[0]) if judged.exists() else "not judged yet"
        rows.append(f"| slash-dense study, arm `{arm}` | {count(len(records), 'run')} of 100,000 steps finished; "
                    f"still training: {training} | "
                    f"{count(len(passing), 'run')} end with a head that passes the strict rule "
                    f"({', '.join(str(h) for r in passing for h in r.final_pass_heads) or 'none'}); peak `/` mass "
                    f"per run {peaks or '-'}; top final `/` mass {'-' if top is None else f'{top:.2f}'} | "
                    f"{verdict} |")
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
