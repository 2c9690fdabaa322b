"""Build a :class:`ViewData` from what the user points at: a model, a scan folder, a training run or a
retrieval run, or a claims study (its first model's scan). Which one is decided by :data:`FOLDER_SOURCES`, in
order: the registered result and run kinds a folder holds (see :func:`kind_of`)."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Sequence

import numpy as np

from headlab.census.result import ScanResult
from headlab.census.scanner import scan
from headlab.corpus import DEFAULT_CORPUS, TEXT_FIELD, Sample, Sampler, documents, repeat_probe
from headlab.errors import HeadlabError
from headlab.formation.head_monitor import read_monitor
from headlab.formation.track_report import PhasesResult
from headlab.formation.tracking import TrackResult
from headlab.models import resolve
from headlab.models.loaded import LoadedModel
from headlab.models.loader import folder_kind
from headlab.nn import as_loaded
from headlab.probes import make_suite
from headlab.probes.scoring import score_probes
from headlab.progress import bar as progress_bar
from headlab.result import found_in
from headlab.retrieval.analysis import KEYS, READERS, AnalyzeResult, circuit_of, head_profile, labels_of
from headlab.retrieval.hops import hop_circuit, hop_scores
from headlab.retrieval.record import RunTask
from headlab.retrieval.settings import ANALYZE
from headlab.retrieval.training import eval_set, load_run
from headlab.study.claims import ClaimsResult, folder_name
from headlab.training import checkpoint as ckpt
from headlab.training.data import load_pool
from headlab.training.run_model import TRAINING_RUN, load_checkpoint_model
from headlab.viewer.data import ViewData, ViewSample, make_sample, store_maps, text_sample

#: grid scores taken from a scan's per-head scores, in this order
#: the probe metrics (headlab.probes.scoring) the viewer shows for a model's own texts
SHOWN_METRICS = ("slash_mass", "offset", "previous-token", "sink")
#: scan.json entries the viewer does not colour heads by: a spread, a run length and an index, not scores
NOT_SHOWN = ("token_std", "token_max_run", "offset_delta")


@dataclass(frozen=True)
class Shown:
    """What every source's view is built with: the texts shown instead of its defaults, the device and dtype maps
    are computed in, the progress bar, the maps' quantization (:class:`headlab.viewer.settings.ViewSettings`)."""

    texts: Sequence[tuple[str, str]] | None
    device: str
    progress: bool
    scale: str
    dtype: str


@dataclass(frozen=True)
class FolderSource:
    """One kind of folder the viewer opens: how it is recognized, by the registered result kinds it holds
    (:func:`headlab.result.found_in`: a retrieval run by its ``task.json``, a :class:`RunTask`) or the registered
    run kinds (:func:`headlab.models.loader.folder_kind`), and how its view is built."""

    kind: str
    recognizes: Callable[[Path], bool]
    build: Callable[[Path, Shown], ViewData]


#: the folder kinds the viewer opens, in the order they are tried (a model directory is the fallback)
FOLDER_SOURCES = (
    FolderSource("retrieval", lambda p: RunTask in found_in(p), lambda p, s: from_retrieval(p, s.progress, s.scale)),
    FolderSource("training", lambda p: folder_kind(p) is TRAINING_RUN and (p / "checkpoints").is_dir(),
                 lambda p, s: from_training(p, s.texts, s.progress, s.scale)),
    FolderSource("scan", lambda p: ScanResult in found_in(p),
                 lambda p, s: from_scan(p, s.texts, s.device, s.progress, s.scale)),
    FolderSource("claims", lambda p: ClaimsResult in found_in(p),
                 lambda p, s: from_scan(claims_scan(p), s.texts, s.device, s.progress, s.scale)),
)


def source_of(source: str | Path) -> FolderSource | None:
    """The folder kind ``source`` is, or None for a model (a name, a hub id or a model directory)."""
    p = Path(source)
    if not p.is_dir():
        return None
    found = next((s for s in FOLDER_SOURCES if s.recognizes(p)), None)
    if found is None and not (p / "config.json").exists():
        raise HeadlabError(f"{p} holds no run headlab can show: no scan.json, no claims study, no training run "
                           "(config.toml and checkpoints/), no retrieval run (task.json), and no model "
                           "(config.json)")
    return found


def kind_of(source: str | Path) -> str:
    found = source_of(source)
    return "model" if found is None else found.kind


def claims_scan(folder: Path) -> Path:
    """The scan folder a claims study opens on: its first model's (in the table's order) that holds a scan."""
    for m in ClaimsResult.read(folder).models:
        sub = folder / folder_name(m.model)
        if ScanResult in found_in(sub):
            return sub
    raise HeadlabError(f"{folder}: the claims study holds no model folder with a scan.json")


def default_texts(loaded: Any, seed: int, n_stimuli: int = 3, n_windows: int = 3) -> list[tuple[str, str]]:
    """(name, text): ``n_windows`` windows of the default corpus that contain '/', then ``n_stimuli`` slash
    stimuli."""

    out: list[tuple[str, str]] = []
    try:
        sampler = Sampler(loaded.tokenizer, min(96, loaded.facts.max_length), seed=seed,
                          target_ids=loaded.ids_containing("/"), target_filter="with-target")
        for k, s in enumerate(sampler.samples(documents(list(DEFAULT_CORPUS)), n_windows)):
            out.append((f"corpus window {k} with '/'", loaded.tokenizer.decode(s.input_ids, skip_special_tokens=True)))
    except HeadlabError:
        pass  # no default corpus installed: the stimuli still show the '/' tokens
    for k, st in enumerate(make_suite("slash", n_stimuli, seed)):
        out.append((f"slash stimulus {k} ({st.meta.get('category', st.template)})", st.text))
    return out


def scanned_texts(loaded: Any, scanned: ScanResult, n_windows: int = 3) -> list[tuple[str, str]]:
    """(name, text): the first ``n_windows`` windows the scan drew from its own corpus (its seed, filter, target
    and record fields), so the page shows what was scanned; none where the scan read no corpus it names (given
    texts, stimuli) or its corpus cannot be read here."""
    st = scanned.settings
    if not isinstance(st.get("corpus"), list):
        return []
    rule = st.get("sdh_rule") or {}
    targets = loaded.ids_containing(rule["target"]) if rule.get("target") else frozenset()
    try:
        sampler = Sampler(loaded.tokenizer, min(96, loaded.facts.max_length), seed=st.get("seed", 0),
                          target_ids=targets, target_filter=st.get("filter", "any"))
        docs = documents(st["corpus"], st.get("id_field"), st.get("text_field") or TEXT_FIELD)
        return [(f"scanned corpus window {k}", loaded.tokenizer.decode(w.input_ids, skip_special_tokens=True))
                for k, w in enumerate(sampler.samples(docs, n_windows))]
    except HeadlabError:
        return []


def _scan_scores(heads: list[dict[str, Any]], L: int, H: int) -> dict[str, np.ndarray]:
    out = {}
    for k, v in heads[0]["scores"].items():  # every detector the scan ran, built in or registered by a user
        if k not in NOT_SHOWN and (v is None or isinstance(v, (int, float))):
            a = np.full((L, H), np.nan)
            for h in heads:
                v = h["scores"].get(k)
                a[h["layer"], h["head"]] = np.nan if v is None else v
            out[k] = a
    return out


def from_model(source: str | LoadedModel, texts: Sequence[tuple[str, str]] | None, scanned: ScanResult | None,
               device: str, progress: bool, scale: str, dtype: str) -> ViewData:
    """A pretrained model (loaded in ``dtype`` when given by name): maps on ``texts`` (default:
    :func:`default_texts`), scores from ``scanned`` when given (a corpus scan), else from a scan of the shown
    texts themselves; either way read from one :class:`ScanResult`."""

    loaded = resolve(source, device=device, dtype=dtype)
    texts = list(texts or (scanned_texts(loaded, scanned) if scanned is not None else [])
                 or default_texts(loaded, seed=0))
    samples = [text_sample(loaded, t, name) for name, t in texts]
    L, H = loaded.facts.n_layers, loaded.facts.n_heads
    if scanned is not None:
        r, note = scanned, (f"Scores: corpus scan of {scanned.n_samples} samples ({scanned.n_samples_with_target} "
                            "with '/'); SDH = the strict rule of that scan.")
    else:
        r = scan(loaded, texts=[t for _, t in texts], corpus=None, max_samples=None, progress=False, device=device,
                 max_length=loaded.facts.max_length, consecutive=min(3, len(texts)))
        note = (f"Scores: the {len(texts)} shown texts only (pass a scan folder for corpus scores); "
                f"SDH rule with {min(3, len(texts))} consecutive samples.")
    scores, sdh, notes = _scan_scores(r.heads(), L, H), r.sdh, [note]
    data = ViewData(title=f"headlab · {loaded.name}", subtitle=f"{L} layers × {H} heads, {loaded.facts.kind}",
                    kind="scan" if scanned is not None else "model", n_layers=L, n_heads=H,
                    causal=loaded.facts.causal, samples=samples, steps=[None], scores=[scores], sdh=sdh,
                    notes=notes, scale=scale)
    bar = progress_bar(1, f"view {loaded.name}: attention maps", "model", progress)
    store_maps(data, loaded, 0)
    if bar is not None:
        bar.update(1)
        bar.close()
    return data


def from_scan(folder: Path, texts: Sequence[tuple[str, str]] | None, device: str, progress: bool,
              scale: str) -> ViewData:
    scanned = ScanResult.read(folder)  # its maps in the dtype its scores were measured in
    return from_model(scanned.model, texts, scanned, device, progress, scale,
                      scanned.settings.get("dtype", "float32"))


def from_training(run: Path, texts: Sequence[tuple[str, str]] | None, progress: bool, scale: str) -> ViewData:
    """A headlab training run: a checkpoint slider over the tracked scores (``headlab track`` output when present,
    else the shown samples), every checkpoint's maps, and the tracker's phases."""

    if not ckpt.checkpoints(run):
        raise HeadlabError(f"{run} has no checkpoints")
    cks = ckpt.sound_checkpoints(run)
    if not cks:
        raise HeadlabError(f"every checkpoint of {run} is damaged")
    track_dir = run / "track"
    tracked = TrackResult.read(track_dir) if TrackResult in found_in(track_dir) else None
    if tracked is not None:
        keep = set(tracked.steps)
        cks = [(s, f) for s, f in cks if s in keep] or cks
    first = load_checkpoint_model(run, cks[-1][1])
    if texts:
        samples = [text_sample(first, t, name) for name, t in texts]
    else:
        pool, _ = load_pool(run)
        ids = pool.probe_ids[0][pool.probe_mask[0]].tolist()
        slash = first.ids_containing("/")
        samples = [make_sample(first.tokenizer, "probe window 0", ids, [i for i, t in enumerate(ids) if t in slash])]
        with_slash = [r for r in range(len(pool.probe_ids))
                      if any(int(t) in slash for t in pool.probe_ids[r][pool.probe_mask[r]])]
        if with_slash and with_slash[0] != 0:
            ids = pool.probe_ids[with_slash[0]][pool.probe_mask[with_slash[0]]].tolist()
            samples.append(make_sample(first.tokenizer, f"probe window {with_slash[0]} (with '/')", ids,
                                       [i for i, t in enumerate(ids) if t in slash]))
        # the tracker's induction probe: an induction head draws its stripe one token past each earlier copy
        rep = list(repeat_probe(first.tokenizer, 1, min(64, first.facts.max_length), seed=0)[0].input_ids)
        samples.append(make_sample(first.tokenizer, "repeated random tokens (the induction probe)", rep, []))
    L, H = first.facts.n_layers, first.facts.n_heads
    data = ViewData(
        title=f"headlab · training run {run.name}",
        subtitle=f"{L} layers × {H} heads, {len(cks)} checkpoints",
        kind="training",
        n_layers=L,
        n_heads=H,
        causal=first.facts.causal,
        samples=samples,
        steps=[s for s, _ in cks],
        scores=[],
        scale=scale,
    )
    bar = progress_bar(len(cks), f"view {run.name}: checkpoints", "checkpoint", progress)
    for c, (step, folder) in enumerate(cks):
        loaded = load_checkpoint_model(run, folder)
        if tracked is not None and step in tracked.steps:
            k = tracked.steps.index(step)
            data.scores.append(
                {m: np.asarray(v[k], dtype=float) for m, v in tracked.scores.items() if m != "offset_delta"}
            )
        else:
            data.scores.append(_shown_scores(loaded, samples))
        store_maps(data, loaded, c)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    _monitor_series(data, run)
    if PhasesResult in found_in(run / "track"):
        data.phases = {m: {k: v["phases"] for k, v in heads.items()}
                       for m, heads in PhasesResult.read(run / "track").scores.items()}
    data.notes.append(
        "Scores: "
        + (
            "headlab track (probe windows, slash stimuli, repeated tokens)"
            if tracked
            else "the shown samples (run headlab track RUN for the tracker's probes)"
        )
        + "."
    )
    return data


def _monitor_series(data: ViewData, run: Path) -> None:
    """The head monitor's scores (``monitor.jsonl``) as ``monitor <metric>`` scores of each checkpoint: the
    latest row at or before its step; its warnings as notes."""

    steps, series, said = read_monitor(run)
    if not steps:
        return
    for c, step in enumerate(data.steps):
        k = int(np.searchsorted(steps, step or 0, side="right")) - 1
        for m, a in series.items():
            data.scores[c][f"monitor {m}"] = a[k] if k >= 0 else np.full(a.shape[1:], np.nan)
    data.notes.append(f"Head monitor: {len(steps)} rows (steps {steps[0]}..{steps[-1]}), shown as the 'monitor' "
                      "scores of the latest row at or before each checkpoint"
                      + "".join(f"; step {w['step']}: {w['message']}" for w in said) + ".")


def _shown_scores(loaded: Any, samples: list[ViewSample]) -> dict[str, np.ndarray]:
    natural = [Sample(i, "view", 0, tuple(s.ids)) for i, s in enumerate(samples)]
    return score_probes(loaded, {"natural": natural}, SHOWN_METRICS)


def _label_scores(model: Any, task: Any, probes: list[dict[str, Any]], kinds: list[str]) -> dict[str, np.ndarray]:
    prof = head_profile(model, task, probes)
    masked = prof.copy()
    masked[..., KEYS.index("bos")] = 0  # a sink is not a retrieval role (as in labels_of)
    L, H = prof.shape[:2]
    sc = {"best label mass": masked.reshape(L, H, -1).max(-1)}
    sc.update({k: prof[:, :, READERS.index(k.split("→")[0]), KEYS.index(k.split("→")[1])] for k in kinds})
    return sc


def from_retrieval(run: Path, progress: bool, scale: str, n_probes: int = 16) -> ViewData:
    """A retrieval run: the labelled circuit, label masses per checkpoint, maps of one probe example."""

    model, task = load_run(run)
    analysis_file = run / "analyze" / AnalyzeResult.KIND
    probes = eval_set(task, n_probes, 2 * 10**6, task.depth)
    hops = None
    if analysis_file.exists():
        a = AnalyzeResult.read(analysis_file)
        labels, circuit, hops = a.labels, a.circuit, a.hops
        if hops:  # a dense run: its heads carry their hop labels, scored by lift over even attention
            labels, circuit = hops["labels"], hop_circuit(hops)
    else:
        prof = head_profile(model, task, probes)
        labels = labels_of(prof, ANALYZE.min_mass)
        circuit = circuit_of(prof, labels)
    ex = probes[0]
    seq = ex["tokens"] + (ex["chain"][:-1] if task.curriculum == "chain" else [])
    v = task.vocab
    names = {v.PAD: "<pad>", v.BOS: "<bos>", v.QUERY: "<query>", v.SEP: "<sep>"}
    tokens = [names.get(t) or (f"x{t - 4}" if v.is_var(t) else f"v{t - 4 - v.n_vars}") for t in seq]
    chain = set(ex["chain"]) | {seq[len(ex["tokens"]) - 1]}
    marked = [i for i, t in enumerate(seq) if t in chain]
    answer = f"v{ex['answer'] - 4 - v.n_vars}"
    sample = ViewSample(f"probe example, depth {task.depth}, answer {answer}", seq, tokens, marked)
    kinds = sorted({lab for row in labels for lab in row if lab != "-"})
    cks = ckpt.checkpoints(run)
    L, H = model.cfg.n_layers, model.cfg.n_heads
    data = ViewData(
        title=f"headlab · retrieval run {run.name}",
        subtitle=f"{L} layers × {H} heads, depth {task.depth}, curriculum {task.curriculum}",
        kind="retrieval",
        n_layers=L,
        n_heads=H,
        causal=True,
        samples=[sample],
        steps=[s for s, _ in cks] or [None],
        scores=[],
        labels=labels,
        circuit=circuit,
        notes=[
            "Scores: each hop label's attention above its control (the distractor chain's same key; its lift) "
            "on 16 probe examples (headlab retrieval analyze, dense targets); the chain's tokens are highlighted."
            if hops else
            "Scores: attention mass of each reader→key kind on 16 probe examples (headlab retrieval "
            "analyze); the chain's tokens are highlighted."
        ],
        scale=scale,
        marked_label="the chain",
    )

    bar = progress_bar(max(1, len(cks)), f"view {run.name}: checkpoints", "checkpoint", progress)
    for c, (_, folder) in enumerate(cks or [(None, None)]):
        m = load_run(run, folder)[0] if folder is not None else model
        data.scores.append(hop_scores(m, task, probes, kinds) if hops else _label_scores(m, task, probes, kinds))
        store_maps(data, as_loaded(m, None, run.name), c)
        if bar is not None:
            bar.update(1)
    if bar is not None:
        bar.close()
    return data
