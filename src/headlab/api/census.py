"""Python twins of the census: ``headlab scan`` (with its folder, checkpoints and per-sample file) and
``headlab top``."""

from __future__ import annotations

import contextlib
import dataclasses
from pathlib import Path
from typing import Any, Sequence

from headlab.census import scanner
from headlab.census.per_sample import recorded_model
from headlab.census.per_sample import top as ranked
from headlab.census.result import ScanResult
from headlab.census.settings import DEFAULTS, TOP, ScanSettings, TopSettings
from headlab.census.stream import CKPT_JSON, CKPT_NPZ
from headlab.display import Displayable
from headlab.distributed import device_for, world
from headlab.errors import HeadlabError, in_callers_words
from headlab.head import Head
from headlab.io import claim_file, claim_out, writing
from headlab.models import LoadedModel
from headlab.models.loader import load_tokenizer
from headlab.result import found_in
from headlab.settings import takes
from headlab.values import listed, strings

_FILES = ScanResult.files()


@in_callers_words
@listed("corpus")
@takes(ScanSettings)
def scan(model: str | LoadedModel, texts: Sequence[str] | None = None, settings: ScanSettings = DEFAULTS, *,
         corpus: Sequence[str] | None = None, resume: bool = False, per_sample: str | Path | None = None,
         device: str, progress: bool, out: str | Path | None,
         overwrite: bool) -> ScanResult:
    """Score every head of ``model`` with ``detectors`` over ``texts`` or ``corpus`` (named sources or paths;
    default wiki pydoc), streaming windows of ``max_length`` tokens (``stride`` apart; default no overlap), at
    most ``max_samples`` of them (None or 0: all). The token detector scores mass on ``target`` (``bare``: the
    plain token only; ``queries``: "can-see" or "all"); the SDH rule is mass > ``threshold`` in ``consecutive``
    consecutive samples that hold the target. ``route`` picks the capture route (auto: fused where possible;
    no T×T matrix is built on the fused and chunked routes; ``chunk_mb`` bounds one block). A JSONL record is
    a document named by its ``id_field`` (else its line number). ``dtype`` (float32, bfloat16, float16): the
    weights of a model the scan loads; scores are accumulated in float32 (bf16 parity: docs/routes.md).

    With ``out``: writes ``scan.json`` and ``heads.csv``, a checkpoint every ``checkpoint_every`` samples
    (``resume`` continues one), and ``per_sample`` (a ``.parquet`` file: one row of scores per sample).
    Under torchrun only rank 0 writes. ``means[detector]`` of the result is ``(L, H)`` (offset: ``(L, H, K+1)``).

    Example:

        r = headlab.scan("minilm-l6", max_samples=64)
        r.to_pandas().nlargest(5, "token")      # the heads that give most attention to '/'
    """
    texts = strings("texts", texts)
    if per_sample is not None and not str(per_sample).endswith(".parquet"):
        raise HeadlabError(f"--per-sample {per_sample}: give a .parquet file path")
    if (resume or settings.checkpoint_every) and out is None:
        raise HeadlabError("checkpoints live in the output folder: pass --out (out=) to checkpoint or resume")
    # every rank refuses a bad --out alike, before the process group forms (the checks read, never write): a rank
    # that went on alone would wait in its first collective for a partner that has exited
    # a resumed scan replaces the result its interrupted run left beside its checkpoint (a finished scan drops
    # the checkpoint, so with one present the result in --out is that interrupted run's)
    replace = overwrite or resume
    if out is not None:
        _check_resume(Path(out), resume, overwrite, CKPT_JSON)
        claim_out(out, _FILES, replace)
    if per_sample is not None:  # the checkpoint names its rows file: a resume continues that one
        claim_file(per_sample, replace, "--per-sample")
    w = world()
    # one writer per folder: under torchrun only rank 0 claims and locks it
    held = writing(out, _FILES, replace) if out is not None and w.main else contextlib.nullcontext(out)
    with held as folder:
        r = scanner.scan(model, texts, corpus=corpus, settings=settings, progress=progress,
                         device=device_for(device, w), checkpoint_dir=folder, resume=resume, per_sample=per_sample)
        if folder is not None and w.main:
            r.write(folder)
            _drop_checkpoint(Path(folder), r.interrupted)
    return r


def _check_resume(out: Path, resume: bool, overwrite: bool, ckpt: str) -> None:
    if resume and overwrite:
        raise HeadlabError("--resume continues the scan in --out and --overwrite starts it over: pass one of them")
    if resume and not (out / ckpt).exists():
        raise HeadlabError(f"{out} holds no scan checkpoint to resume; run without --resume")
    if not resume and not overwrite and (out / ckpt).exists():
        raise HeadlabError(f"{out} holds the checkpoint of an unfinished scan; pass --resume to continue it or "
                           "--overwrite to start over")


def _drop_checkpoint(out: Path, interrupted: bool) -> None:
    """A finished scan's checkpoint has served its purpose; an interrupted one keeps it for --resume."""
    if not interrupted:
        for name in (CKPT_JSON, CKPT_NPZ):
            (out / name).unlink(missing_ok=True)


@dataclasses.dataclass
class TopSamples(Displayable):
    """The samples where one head scores highest: rank, score, sample, document, window and decoded text."""

    head: str
    detector: str
    source: str
    rows: list[dict[str, Any]]

    def markdown(self) -> str:
        lines = [f"top {len(self.rows)} samples of head {self.head} by {self.detector} in {self.source}", "",
                 "| rank | score | sample | document | window | text |", "|---|---|---|---|---|---|"]
        for i, r in enumerate(self.rows, 1):
            text = " ".join(str(r["text"]).split())[:160].replace("|", "\\|")
            lines.append(f"| {i} | {r['score']:.4f} | {r['sample']} | {r['doc']} | {r['window']} | {text} |")
        return "\n".join(lines) + "\n"

    def records(self) -> list[dict[str, Any]]:
        return [dict(r) for r in self.rows]


@in_callers_words
@takes(TopSettings)
def top(source: str | Path, settings: TopSettings = TOP, *, head: str) -> TopSamples:
    """The ``k`` samples where ``head`` (``L.H``) scores highest under ``detector``, read from a scan's
    per-sample Parquet (``source``: the file, or the scan folder that names it); texts decoded with ``model``'s
    tokenizer (default: the scan's model).

    Example:

        headlab.scan("minilm-l6", per_sample="runs/s.parquet", out="runs/s")
        headlab.top("runs/s", head="0.4", k=5)        # rank, score, document, window, text
    """

    detector, k, model = settings.detector, settings.k, settings.model

    path = Path(source)
    if path.is_dir():
        if ScanResult not in found_in(path):
            raise HeadlabError(f"{path} holds no scan.json; give the .parquet file of scan --per-sample")
        scanned = ScanResult.read(path)
        model = model or scanned.model
        found = scanned.settings.get("per_sample")
        if not found:
            raise HeadlabError(f"the scan in {path} wrote no per-sample file; rerun it with --per-sample FILE.parquet")
        path = Path(found)
    if not path.exists():
        raise HeadlabError(f"{path} does not exist")
    name = str(Head.parse(head))
    rows = ranked(path, name, detector, k)
    model = model or recorded_model(path)
    tok = load_tokenizer(model) if model else None
    for row in rows:
        row["text"] = tok.decode(row["ids"], skip_special_tokens=True) if tok is not None else None
    return TopSamples(name, detector, str(path), rows)
