"""Benchmark: the census of model shapes built from configs with random weights, against the plain forward of the
same batch, and the eager ``output_attentions`` path every peer needs (bench/gpu_check.sh runs it on a GPU).

Speed does not depend on the weights, so no weights travel: each shape is a transformers config (a Llama-3-8B-
shaped decoder in bf16 is about 15 GB on the device, built there). Inputs are token ids drawn from a Zipf law over
the vocabulary (text repeats its tokens; the token-match detectors' cost grows with the repeats), seeded. Per
shape, length T and batch B, interleaved rounds of:
  plain     the model's SDPA forward (flash where torch picks it): the floor;
  census    headlab's default detectors on the ``fused`` capture route (``auto``'s choice wherever it can
            serve; --route to force another);
  triton    (with --configs ... triton) the same census with every layer computed by the one-pass Triton kernel
            (headlab.attention.routes.triton_route's handler on the chunked route's seam): what the census will
            cost once the route is wired in;
  attn      the eager forward with ``output_attentions=True`` (what TransformerLens, nnsight and bertviz read),
            its tensors kept, as a peer keeps them; "out of memory" where it does not fit.
Time is the median over rounds, memory the peak allocated (CUDA) or resident (CPU) during the call; ratios are
against ``plain`` in the same process. A cell that runs out of memory or past --cell-seconds is recorded with
its reason instead of a number. Writes the rows as JSON (--json) and a Markdown table (--markdown).

    python bench/gpu_census.py --device cuda --shapes llama3-8b --lengths 2048 8192 32768 --batches 1
    python bench/gpu_census.py --dry-run      # CPU, tiny shapes, T <= 2048: what make test runs
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any, Callable, Iterator

import numpy as np
import torch
from long_context import PeakRSS

from headlab.attention.adapters import adapter_for
from headlab.census.engine import collate, forward, score_batches
from headlab.corpus import Sample
from headlab.detectors import DEFAULT_DETECTORS, make
from headlab.models.loaded import LoadedModel, read_facts

#: shape -> (config class, its settings, causal). The real models' shapes, from their published configs.
SHAPES: dict[str, tuple[str, dict[str, Any], bool]] = {
    "llama3-8b": ("LlamaConfig", dict(vocab_size=128256, hidden_size=4096, intermediate_size=14336,
                                      num_hidden_layers=32, num_attention_heads=32, num_key_value_heads=8,
                                      rope_theta=500000.0, max_position_embeddings=131072), True),
    "bert-base": ("BertConfig", dict(vocab_size=30522, hidden_size=768, intermediate_size=3072, num_hidden_layers=12,
                                     num_attention_heads=12, max_position_embeddings=512), False),
    "smollm2-135m": ("LlamaConfig", dict(vocab_size=49152, hidden_size=576, intermediate_size=1536,
                                         num_hidden_layers=30, num_attention_heads=9, num_key_value_heads=3,
                                         max_position_embeddings=8192), True),
    "gemma3-270m": ("Gemma3TextConfig", dict(vocab_size=262144, hidden_size=640, intermediate_size=2048,
                                             num_hidden_layers=18, num_attention_heads=4, num_key_value_heads=1,
                                             head_dim=256, sliding_window=512, max_position_embeddings=32768), True),
    # the dry run's: every code path of the real shapes (GQA, RoPE; an encoder) in seconds on a CPU
    "tiny-llama": ("LlamaConfig", dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                       num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=4096),
                   True),
    "tiny-bert": ("BertConfig", dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2,
                                     num_attention_heads=4, max_position_embeddings=512), False),
}
CONFIGS = ("plain", "census", "attn")  # and "triton", asked for by --configs


class _Tokenizer:
    """What the detectors read of a tokenizer, for a model that has none: no special tokens, id 0 pads."""

    sep_token_id = cls_token_id = bos_token_id = eos_token_id = None
    pad_token_id = 0
    all_special_ids: list[int] = []


def build(shape: str, device: str, dtype: torch.dtype) -> LoadedModel:
    """The shape's model with random weights, built on ``device`` in ``dtype`` (no copy through the host)."""
    import transformers

    cls, settings, causal = SHAPES[shape]
    cfg = getattr(transformers, cls)(**settings)
    torch.manual_seed(0)
    auto = transformers.AutoModel  # the base model: a peer reads attention, not the language-model head
    with torch.device(device):
        model = auto.from_config(cfg, dtype=dtype, attn_implementation="sdpa")
    model.eval()
    lm = LoadedModel(name=shape, model=model, tokenizer=_Tokenizer(), facts=read_facts(model), source="random init",
                     adapter=adapter_for(model))
    lm.ids_containing = lambda c, bare=False: frozenset({7})  # type: ignore[method-assign]  # id 7 plays '/'
    return lm


def zipf_ids(vocab: int, T: int, batch: int, seed: int = 0) -> list[tuple[int, ...]]:
    """``batch`` sequences of ``T`` ids, rank r drawn with weight 1/r (ids past the vocabulary folded back)."""
    rng = np.random.default_rng(seed)
    draws = rng.zipf(1.2, size=(batch, T)) % (vocab - 8) + 8  # ids 0..7 left to the stand-in specials
    return [tuple(int(x) for x in row) for row in draws]


def _memory(device: str) -> Callable[[], Any]:
    if device.startswith("cuda"):
        torch.cuda.synchronize()
        torch.cuda.reset_peak_memory_stats()
        return lambda: torch.cuda.max_memory_allocated() / 2**20
    mem = PeakRSS().__enter__()
    return lambda: (mem.__exit__(), mem.peak)[1]


@contextmanager
def _triton_pass(lm: LoadedModel, dets: list[Any]) -> Iterator[str | None]:
    """Every layer of a census computed by the Triton kernel (the route's handler on the kernel seam), or why it
    cannot be."""
    from headlab.attention import routes
    from headlab.attention.routes.triton_route import blocked, handler

    reason = blocked(lm.model, dets)
    if reason:
        yield reason
        return
    kept = routes.LayerScorer.kernel
    routes.LayerScorer.kernel = lambda self, route: handler(self)  # type: ignore[method-assign]
    try:
        yield None
    finally:
        routes.LayerScorer.kernel = kept  # type: ignore[method-assign]


def cell(lm: LoadedModel, config: str, windows: list[tuple[int, ...]], device: str, limit: float,
         route: str = "fused") -> dict[str, Any]:
    """One timed call of ``config``: seconds and peak MB, or the reason it could not run."""
    dev = torch.device(device)
    batch = collate([Sample(i, "zipf", i, w) for i, w in enumerate(windows)], 0, lm.facts.causal, dev)
    dets = [make(n) for n in DEFAULT_DETECTORS]
    for d in dets:
        d.bind(lm)
    out: dict[str, Any] = {}
    peak = _memory(device)
    t0 = time.perf_counter()
    try:
        with torch.inference_mode():
            if config == "plain":
                lm.model.set_attn_implementation("sdpa")
                forward(lm, batch)
            elif config == "attn":
                lm.model.set_attn_implementation("eager")
                kept = lm.model(input_ids=batch.input_ids, attention_mask=batch.attention_mask.long(),
                                output_attentions=True).attentions
                out["attention_gb"] = round(sum(a.numel() * a.element_size() for a in kept) / 2**30, 2)
                del kept
            elif config == "triton":
                lm.model.set_attn_implementation("eager")
                with _triton_pass(lm, dets) as reason:
                    if reason:
                        return {"error": reason}
                    list(score_batches(lm, dets, [batch], "chunked"))
            else:
                lm.model.set_attn_implementation("eager")
                list(score_batches(lm, dets, [batch], route))
        if device.startswith("cuda"):
            torch.cuda.synchronize()
    except torch.OutOfMemoryError:
        out = {"error": "out of memory"}
    seconds = time.perf_counter() - t0
    mb = peak()
    lm.model.set_attn_implementation("eager")
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    if "error" in out:
        return out
    if seconds > limit:
        out["note"] = f"took {seconds:.0f} s, past the {limit:.0f} s a cell is given: later rounds skipped"
    return {**out, "seconds": seconds, "peak_mb": mb}


def run_shape(shape: str, lengths: list[int], batches: list[int], device: str, dtype: torch.dtype, rounds: int,
              limit: float, route: str, done: Callable[[list[dict[str, Any]]], None],
              configs: tuple[str, ...] = CONFIGS) -> list[dict[str, Any]]:
    """Every (batch, T) cell of one shape; ``done`` gets the rows so far after each (a stage stopped by its
    timeout keeps what it measured)."""
    t0 = time.perf_counter()
    lm = build(shape, device, dtype)
    built = time.perf_counter() - t0
    print(f"{shape}: built on {device} in {dtype} in {built:.1f} s ({lm.facts.n_layers} layers x "
          f"{lm.facts.n_heads} heads)", flush=True)
    rows = []
    for B in batches:
        for T in lengths:
            windows = zipf_ids(lm.facts.vocab_size, T, B)
            cell(lm, "plain", windows, device, limit, route)  # warm-up: kernels chosen, memory pools grown
            got: dict[str, list[dict[str, Any]]] = {c: [] for c in configs}
            stopped: dict[str, str] = {}
            for _ in range(rounds):
                for c in configs:
                    if c in stopped:
                        continue
                    r = cell(lm, c, windows, device, limit, route)
                    got[c].append(r)
                    if "error" in r or "note" in r:
                        stopped[c] = r.get("error") or r["note"]
            plain = [r for r in got["plain"] if "seconds" in r]
            base_s = statistics.median(r["seconds"] for r in plain) if plain else None
            base_mb = max(r["peak_mb"] for r in plain) if plain else None
            for c in configs:
                ok = [r for r in got[c] if "seconds" in r]
                row: dict[str, Any] = {"shape": shape, "T": T, "batch": B, "config": c, "device": device,
                                       "dtype": str(dtype).removeprefix("torch."), "rounds": len(ok)}
                if ok:
                    s, mb = statistics.median(r["seconds"] for r in ok), max(r["peak_mb"] for r in ok)
                    row.update(seconds=round(s, 4), peak_mb=round(mb, 1),
                               time_ratio=round(s / base_s, 3) if base_s else None,
                               memory_ratio=round(mb / base_mb, 3) if base_mb else None)
                    row.update({k: v for k, v in ok[0].items() if k == "attention_gb"})
                if c in stopped:
                    row["reason"] = stopped[c]
                rows.append(row)
                shown = (f"{row['seconds']:8.3f} s {row['peak_mb']:9.0f} MB  time {row['time_ratio']}x  memory "
                         f"{row['memory_ratio']}x" if ok else "")
                print(f"  B={B} T={T:6d} {c:<7} {shown} {row.get('reason', '')}", flush=True)
            done(rows)
    del lm
    gc.collect()
    if device.startswith("cuda"):
        torch.cuda.empty_cache()
    return rows


def markdown(rows: list[dict[str, Any]]) -> str:
    lines = ["| shape | batch | T | config | seconds | peak MB | time / plain | memory / plain | note |",
             "|---|---|---|---|---|---|---|---|---|"]
    for r in rows:
        if "seconds" in r:
            lines.append(f"| {r['shape']} | {r['batch']} | {r['T']} | {r['config']} | {r['seconds']:.3f} | "
                         f"{r['peak_mb']:.0f} | {r['time_ratio']} | {r['memory_ratio']} | {r.get('reason', '')} |")
        else:
            lines.append(f"| {r['shape']} | {r['batch']} | {r['T']} | {r['config']} | - | - | - | - | "
                         f"{r.get('reason', '')} |")
    return "\n".join(lines) + "\n"


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--dry-run", action="store_true", help="CPU, the tiny shapes, T of 256 and 1024, one round")
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--shapes", nargs="+", default=["llama3-8b"], choices=sorted(SHAPES))
    ap.add_argument("--lengths", type=int, nargs="+", default=[2048, 8192, 32768])
    ap.add_argument("--batches", type=int, nargs="+", default=[1])
    ap.add_argument("--dtype", default="bfloat16", choices=("float32", "bfloat16", "float16"))
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--cell-seconds", type=float, default=60.0, help="a config slower than this runs once")
    ap.add_argument("--route", default="fused", choices=("fused", "chunked", "eager"))
    ap.add_argument("--configs", nargs="+", default=list(CONFIGS), choices=(*CONFIGS, "triton"),
                    help="what is timed beside plain (plain always runs first)")
    ap.add_argument("--json", default=None)
    ap.add_argument("--markdown", default=None)
    a = ap.parse_args(argv)
    if a.dry_run:
        a.device, a.shapes, a.lengths, a.batches, a.rounds, a.dtype = ("cpu", ["tiny-llama", "tiny-bert"],
                                                                       [256, 1024], [1, 2], 1, "float32")
    if a.device.startswith("cuda") and not torch.cuda.is_available():
        print(f"--device {a.device}: torch sees no CUDA device", file=sys.stderr)
        return 2
    rows: list[dict[str, Any]] = []

    def save(new: list[dict[str, Any]]) -> None:
        if a.json:
            Path(a.json).write_text(json.dumps(rows + new, indent=1))
        if a.markdown:
            Path(a.markdown).write_text(markdown(rows + new))

    for shape in a.shapes:
        lengths = [T for T in a.lengths if T <= SHAPES[shape][1]["max_position_embeddings"]]
        configs = ("plain", *dict.fromkeys(c for c in a.configs if c != "plain"))
        rows += run_shape(shape, lengths, a.batches, a.device, getattr(torch, a.dtype), a.rounds, a.cell_seconds,
                          a.route, save, configs)
        save([])
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
