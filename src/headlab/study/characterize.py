"""Head characterization with constructed stimuli (``headlab characterize``).

For every head, with bootstrap 95% intervals over items:
* slash mass: mean attention on the marked `/` of the ``slash`` suite, and the SDH rule on that suite;
* specificity: mass on `/` divided by mass on each control symbol in the same template slot (``controls``);
* position sensitivity: the `/` mass at every gap of the ``positions`` sweep (the curve) and its coefficient of
  variation across gaps (std / mean; 0 = position-insensitive);
* context independence: mass under ``random``-token and ``shuffled`` contexts relative to ``natural`` text;
* layer profile: SDHs and top heads per relative depth third (layer + 0.5) / n_layers;
* the strict rule's placebo null: how many heads pass the same rule when each placebo symbol stands in the
  `/` slots of the same stimuli (``placebo``, symbol -> count of heads).
All masses use the ``marked`` detector (keys = the marked target tokens, queries that can see one).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, ClassVar, Sequence

import numpy as np

from headlab.census.engine import score_samples
from headlab.census.stats import SDH, ConsecutiveRule
from headlab.detectors import make
from headlab.display import flat
from headlab.head import Head
from headlab.head import name as head_name
from headlab.io import write_text_atomic
from headlab.models import LoadedModel, resolve
from headlab.probes import contexts, controls, positions, to_samples
from headlab.probes.suites import POSITION_WORDS
from headlab.probes.templates import CONTROL_SYMBOLS, PLACEBO_SYMBOLS
from headlab.progress import bar as progress_bar
from headlab.result import Result, per_head
from headlab.settings import Settings, setting
from headlab.study.bootstrap import curve_cv_ci, mean_ci, ratio_ci
from headlab.study.rope import KAPPA, RopeResult, rope_analysis, rope_from_json
from headlab.values import ITEM_BYTES, Rule

DEPTH_BINS = (("early", 0.0, 1 / 3), ("middle", 1 / 3, 2 / 3), ("late", 2 / 3, 1.0 + 1e-9))


def marked_mass(loaded: LoadedModel, stimuli: Sequence[Any], batch_size: int, progress: Any = None
                ) -> np.ndarray:
    """(N, L, H) per-stimulus mass on the marked targets, in stimulus order."""
    samples = to_samples(stimuli, loaded.tokenizer, loaded.facts.max_length)
    blocks = [s["marked"] for _, s in score_samples(loaded, [make("marked")], samples, batch_size, progress)]
    return np.concatenate(blocks).astype(np.float64)


def _triple(mean: np.ndarray, lo: np.ndarray, hi: np.ndarray) -> dict[str, np.ndarray]:
    return {"value": mean, "lo": lo, "hi": hi}


@dataclass
class CharacterizeResult(Result):
    """Every head's behaviour on constructed stimuli with bootstrap 95% intervals; ``to_pandas()``: one row per
    head (``slash_mass``, ``slash_mass_lo``, ``slash_mass_hi``, specificity, position CV, context ratios)."""

    model: str
    n_layers: int
    n_heads: int
    settings: dict[str, Any]
    slash_mass: dict[str, np.ndarray]                      # value/lo/hi, (L, H)
    specificity: dict[str, dict[str, np.ndarray]]          # symbol (and "pooled") -> value/lo/hi
    position_curve: np.ndarray                             # (G, L, H)
    position_gaps: list[float]                             # relative positions of the sweep
    position_cv: dict[str, np.ndarray]
    context: dict[str, dict[str, np.ndarray]]              # "random"/"shuffled" relative to natural
    sdh: np.ndarray                                        # (L, H) bool, SDH rule on the slash suite
    top: list[tuple[int, int]] = field(default_factory=list)
    rope: RopeResult | None = None                         # the slash-pattern analysis, RoPE models only
    placebo: dict[str, int] | None = None                  # symbol -> heads passing the strict rule on it

    def depth_profile(self) -> dict[str, dict[str, int]]:
        rel = (np.arange(self.n_layers) + 0.5) / self.n_layers
        out = {}
        top = np.zeros_like(self.sdh)
        for layer, head in self.top:
            top[layer, head] = True
        for name, a, b in DEPTH_BINS:
            rows = (rel >= a) & (rel < b)
            out[name] = {"layers": int(rows.sum()), "heads": int(rows.sum() * self.n_heads),
                         "sdh": int(self.sdh[rows].sum()), "top": int(top[rows].sum())}
        return out

    def head(self, layer: int, head: int) -> dict[str, Any]:
        def cell(t: dict[str, np.ndarray]) -> list[float]:
            return [float(t["value"][layer, head]), float(t["lo"][layer, head]), float(t["hi"][layer, head])]

        return {"layer": layer, "head": head, "name": head_name(layer, head), "sdh": bool(self.sdh[layer, head]),
                "slash_mass": cell(self.slash_mass),
                "specificity": {k: cell(v) for k, v in self.specificity.items()},
                "position_cv": cell(self.position_cv),
                "position_curve": [float(x) for x in self.position_curve[:, layer, head]],
                "context": {k: cell(v) for k, v in self.context.items()}}

    def records(self) -> list[dict[str, Any]]:
        rows = []
        for l in range(self.n_layers):
            for h in range(self.n_heads):
                d = self.head(l, h)
                row: dict[str, Any] = {"head": d["name"], "layer": l, "index": h, "sdh": d["sdh"]}
                triples = {"slash_mass": d["slash_mass"], "position_cv": d["position_cv"],
                           **flat("specificity", d["specificity"]), **flat("context", d["context"])}
                for key, (v, lo, hi) in triples.items():
                    row.update({key: v, f"{key}_lo": lo, f"{key}_hi": hi})
                rows.append(row)
        return rows

    KIND = "characterize.json"
    COMPANIONS = ("characterize.md",)
    KEYS = ("model", "n_layers", "n_heads", "settings", "position_gaps", "n_sdh", "sdh_share", "depth_profile",
            "top", "intervals", "heads", "rope", "placebo")

    def to_json(self) -> dict[str, Any]:
        return {"model": self.model, "n_layers": self.n_layers, "n_heads": self.n_heads,
                "settings": self.settings, "position_gaps": self.position_gaps,
                "n_sdh": int(self.sdh.sum()), "sdh_share": float(self.sdh.mean()),
                "depth_profile": self.depth_profile(), "top": [head_name(l, h) for l, h in self.top],
                "intervals": "[value, lower, upper]: percentile bootstrap 95% over items",
                "heads": [self.head(l, h) for l in range(self.n_layers) for h in range(self.n_heads)],
                "rope": self.rope.to_json() if self.rope is not None else None, "placebo": self.placebo}

    @classmethod
    def decode(cls, d: dict[str, Any]) -> "CharacterizeResult":
        """The inverse of :meth:`to_json` (arrays rebuilt from the per-head records)."""
        L, H, heads = d["n_layers"], d["n_heads"], d["heads"]

        def tri(get: Any) -> dict[str, np.ndarray]:
            a = per_head(heads, L, H, get)  # (L, H, 3): value, lower, upper
            return _triple(a[..., 0], a[..., 1], a[..., 2])

        first = heads[0]
        return CharacterizeResult(
            model=d["model"], n_layers=L, n_heads=H, settings=d["settings"],
            slash_mass=tri(lambda h: h["slash_mass"]),
            specificity={k: tri(lambda h, k=k: h["specificity"][k]) for k in first["specificity"]},
            position_curve=np.moveaxis(per_head(heads, L, H, lambda h: h["position_curve"]), -1, 0),
            position_gaps=list(d["position_gaps"]), position_cv=tri(lambda h: h["position_cv"]),
            context={k: tri(lambda h, k=k: h["context"][k]) for k in first["context"]},
            sdh=per_head(heads, L, H, lambda h: h["sdh"]).astype(bool),
            top=[tuple(Head.parse(x)) for x in d["top"]],  # type: ignore[misc]
            rope=rope_from_json(d["rope"]) if d["rope"] is not None else None, placebo=d.get("placebo"))

    def markdown(self) -> str:
        s = self.settings
        lines = [f"# Characterization of {self.model}", "",
                 f"{self.n_layers}x{self.n_heads} heads; {s['n']} base items per suite, seed {s['seed']}; "
                 f"intervals are bootstrap 95% over items.", "",
                 f"SDH rule on the slash suite (mass > {s['threshold']} in {s['consecutive']} consecutive "
                 f"stimuli): {int(self.sdh.sum())} heads ({100 * self.sdh.mean():.1f}%).", "",
                 "| relative depth | layers | SDHs | top heads |", "|---|---|---|---|"]
        for name, row in self.depth_profile().items():
            lines.append(f"| {name} | {row['layers']} | {row['sdh']} | {row['top']} |")
        lines += ["", f"Top {len(self.top)} heads by mass on `/` (*not `/`-specific*: the pooled specificity's "
                  "interval does not lie above 1, so the head gives other symbols in the same slot as much mass "
                  "or more; its `/` mass is explained by where it looks, not by `/`):", "",
                  "| head | `/` mass | specificity (pooled) | position CV | random / natural | shuffled / natural |",
                  "|---|---|---|---|---|---|"]
        fmt = lambda c: f"{c[0]:.3f} [{c[1]:.3f}, {c[2]:.3f}]"  # noqa: E731
        for layer, head in self.top:
            h = self.head(layer, head)
            label = (" (SDH)" if h["sdh"] else "") + (" *not `/`-specific*" if h["specificity"]["pooled"][1] <= 1
                                                        else "")
            lines.append(f"| {h['name']}{label} | {fmt(h['slash_mass'])} | "
                         f"{fmt(h['specificity']['pooled'])} | {fmt(h['position_cv'])} | "
                         f"{fmt(h['context']['random'])} | {fmt(h['context']['shuffled'])} |")
        if self.rope is not None:
            lines += ["", *rope_markdown(self.rope)]
        return "\n".join(lines) + "\n"

    def write_companions(self, folder: Path) -> None:
        write_text_atomic(folder / "characterize.md", self.markdown())


@dataclass(frozen=True)
class CharacterizeSettings(Settings):
    """What ``headlab characterize`` measures: ``n`` base items per suite (at least 2, for intervals), their
    ``seed``; the SDH rule (``threshold`` θ, ``consecutive`` k); the ``top`` heads listed; the position sweep's
    ``words``; the control ``symbols``; the strict rule's ``placebos``; RoPE's (κ, Δ) analysis (``kappa``,
    ``rope_samples`` prompts); and
    ``batch_size``."""

    FAMILY: ClassVar[str] = "characterize"
    LISTS: ClassVar[tuple[str, ...]] = ("symbols", "placebos")

    n: int = setting(40, "base items per suite (at least 2, for intervals)",
                         rule=Rule("whole", 2, each=ITEM_BYTES))
    seed: int = setting(0, "random seed (the suites' items)")
    threshold: float = setting(SDH.threshold, "SDH rule θ")
    consecutive: int = setting(SDH.consecutive, "SDH rule k")
    top: int = setting(10, "heads in the summary table")
    kappa: float = setting(KAPPA, "(κ, Δ)-slash-dominance threshold (RoPE models; ours)")
    rope_samples: int = setting(64, "natural and random prompts for the RoPE analysis")
    batch_size: int = setting(8, "samples per forward pass")
    words: int = setting(POSITION_WORDS, "words of the position sweep's filler")
    symbols: tuple[str, ...] = setting(CONTROL_SYMBOLS, "control symbols compared with '/'",
                                       annotation="Sequence[str]")
    placebos: tuple[str, ...] = setting(PLACEBO_SYMBOLS, "symbols put in the slots of '/' for the strict rule's null",
                                        annotation="Sequence[str]")


    def more_problems(self) -> list[str]:
        for name in self.LISTS:
            flag, given = f"--{self.flag(name)}", getattr(self, name)
            if not given or any(not isinstance(v, str) or len(v) != 1 or not v.strip() for v in given):
                return [f"{flag} {' '.join(map(repr, given)) or '(none)'}: give one or more single visible "
                        "characters, each put in the slots of '/'"]
            if "/" in given:
                return [f"{flag} '/': the target itself; in its slots '/' would be compared with '/': leave it out"]
        return []


#: characterize given no options
CHARACTERIZE = CharacterizeSettings()


def characterize(model: str | LoadedModel, settings: CharacterizeSettings = CHARACTERIZE, *, progress: bool,
                 device: str, dtype: str) -> CharacterizeResult:
    """Characterize every head of ``model`` with the constructed suites (``settings.n`` base items each)."""
    st = settings
    n, seed, batch_size, words, symbols = st.n, st.seed, st.batch_size, st.words, st.symbols
    threshold, consecutive, top, kappa, rope_samples = st.threshold, st.consecutive, st.top, st.kappa, st.rope_samples
    loaded = resolve(model, device=device, dtype=dtype)
    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    suites = {
        "controls": controls(n, seed, symbols),
        "placebos": controls(n, seed, [p for p in st.placebos if p not in symbols]),
        "positions": positions(n, seed, words),
        "contexts": [s for s in contexts(n, seed, loaded.tokenizer) if s.meta["context"] != "no-slash"],
    }
    is_rope = loaded.facts.position_encoding == "rope"
    bar = progress_bar(sum(len(v) for v in suites.values()) + (2 * rope_samples if is_rope else 0),
                       f"characterize {loaded.name}", "stimulus", progress)
    try:
        mass = {k: marked_mass(loaded, v, batch_size, bar) for k, v in suites.items()}
        rope = rope_analysis(loaded, n=rope_samples, kappa=kappa, seed=seed, batch_size=batch_size, corpus=None,
                             progress=bar) if is_rope else None
    finally:
        if bar is not None:
            bar.close()

    per = 1 + len(symbols)  # controls: original then one copy per symbol, for each template
    ctrl = mass["controls"].reshape(n, per, L, H)
    slash_m = ctrl[:, 0]
    spec = {sym: _triple(*ratio_ci(slash_m, ctrl[:, 1 + i], seed=seed)) for i, sym in enumerate(symbols)}
    spec["pooled"] = _triple(*ratio_ci(slash_m, np.nanmean(ctrl[:, 1:], 1), seed=seed))

    G = words - 1
    pos = mass["positions"].reshape(n, G, L, H)
    curve = np.nanmean(pos, 0)  # (G, L, H)
    cv = _triple(*curve_cv_ci(pos, seed=seed))

    kinds = [s.meta["context"] for s in suites["contexts"]]
    ctx = {k: mass["contexts"][[i for i, c in enumerate(kinds) if c == k]] for k in ("natural", "shuffled", "random")}
    context = {k: _triple(*ratio_ci(ctx[k], ctx["natural"], seed=seed)) for k in ("random", "shuffled")}

    rule = ConsecutiveRule((L, H), threshold, consecutive)
    rule.update(slash_m)
    placebo = placebo_counts(mass, n, symbols, st.placebos, threshold, consecutive)
    order = np.argsort(-np.nan_to_num(np.nanmean(slash_m, 0), nan=-1).ravel(), kind="stable")[:top]
    return CharacterizeResult(
        model=loaded.name, n_layers=L, n_heads=H,
        settings={**st.record(), "dtype": loaded.dtype, "detector": "marked (can-see queries)",
                  "rope_samples": rope_samples if is_rope else 0},
        slash_mass=_triple(*mean_ci(slash_m, seed=seed)), specificity=spec,
        position_curve=curve, position_gaps=[k / words for k in range(1, words)], position_cv=cv,
        context=context, sdh=rule.passed, top=[(int(i // H), int(i % H)) for i in order], rope=rope,
        placebo=placebo)


def placebo_counts(mass: dict[str, np.ndarray], n: int, symbols: Sequence[str], placebos: Sequence[str],
                   threshold: float, consecutive: int) -> dict[str, int]:
    """The strict rule's count of passing heads with each placebo symbol as the target, in the `/` slots of the
    same stimuli in the same order (a placebo that is a control symbol is read from the controls suite)."""
    copies = {"controls": list(symbols), "placebos": [p for p in placebos if p not in symbols]}
    out = {}
    for suite, syms in copies.items():
        m = mass[suite].reshape(n, 1 + len(syms), *mass[suite].shape[1:])  # (n, 1 + S, L, H)
        for i, sym in enumerate(syms):
            if sym not in placebos:
                continue
            rule = ConsecutiveRule(m.shape[2:], threshold, consecutive)
            rule.update(m[:, 1 + i])
            out[sym] = int(rule.passed.sum())
    return out


def rope_markdown(r: RopeResult, top: int = 8) -> list[str]:
    best = np.nan_to_num(r.slash_natural, nan=-1)
    L, H, K1 = best.shape
    flat = best.max(-1).ravel()
    kv = r.rank1_k.shape[1]
    lines = [
        f"## Slash pattern (SlashScore(Δ), Cheng et al. 2026; κ = {r.kappa}, ours)",
        "",
        f"(κ, Δ)-slash-dominant heads on {r.n_natural} natural / {r.n_random} random-token prompts: "
        + ", ".join(
            f"Δ={d}: {int(r.slash_dominant('natural')[..., d].sum())}/{int(r.slash_dominant('random')[..., d].sum())}"
            for d in range(K1)
        ),
        "",
        "| head | best Δ | SlashScore natural | random | rank-1 share q | rank-1 share k | q energy high/med/low |",
        "|---|---|---|---|---|---|---|",
    ]
    for i in np.argsort(-flat, kind="stable")[:top]:
        l, h = divmod(int(i), H)
        d = int(best[l, h].argmax())
        b = r.bands_q[l, h]
        lines.append(
            f"| {l}.{h} | {d} | {r.slash_natural[l, h, d]:.3f} | {r.slash_random[l, h, d]:.3f} | "
            f"{r.rank1_q[l, h]:.3f} | {r.rank1_k[l, h * kv // H]:.3f} | {b[0]:.2f}/{b[1]:.2f}/{b[2]:.2f} |"
        )
    return lines
