"""``headlab monitor check`` on short records against a bare forward of the same records: records per second
and their ratio, measured in one process (interleaved rounds, median), the model loaded once for both.

    .venv/bin/python bench/monitor_check_speed.py [--records 1000] [--model minilm-l6] [--rounds 3]
        [--threads 2] [--out FILE.json]

The records are prose cut to 24 words (one window each, as in bench/monitor_check_memory.py), checked against a
profile fitted on 300 windows of the wiki corpus (not timed). "check" is the whole command in Python without a
result folder: reading the JSONL, the scan with the profile's detectors, fingerprints and scores. "bare" is the
model's SDPA forward of the same records, tokenized alone, sorted by length and batched as the check batches.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import torch
from monitor_check_memory import dataset

import headlab.monitor as monitor
from headlab import load

os.environ.setdefault("HF_HUB_OFFLINE", "1")


def bare_forward(lm: Any, texts: list[str], batch_size: int, max_length: int) -> None:
    ids = sorted((lm.tokenizer(t, truncation=True, max_length=max_length)["input_ids"] for t in texts), key=len)
    lm.model.set_attn_implementation("sdpa")
    try:
        with torch.inference_mode():
            for a in range(0, len(ids), batch_size):
                chunk = ids[a:a + batch_size]
                width = max(map(len, chunk))
                x = torch.full((len(chunk), width), lm.pad_id)
                mask = torch.zeros((len(chunk), width), dtype=torch.long)
                for i, row in enumerate(chunk):
                    x[i, :len(row)], mask[i, :len(row)] = torch.tensor(row), 1
                lm.model(input_ids=x, attention_mask=mask)
    finally:
        lm.model.set_attn_implementation("eager")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--model", default="minilm-l6")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--out", type=Path)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)
    with tempfile.TemporaryDirectory() as tmp:
        data, profile = Path(tmp) / "records.jsonl", Path(tmp) / "profile"
        dataset(data, a.records)
        texts = [json.loads(line)["text"] for line in data.read_text().splitlines()]
        lm = load(a.model)
        prof = monitor.fit(lm, corpus=["wiki"], max_samples=300, progress=False, out=profile)
        batch_size, max_length = monitor.CHECK.batch_size, prof.settings["max_length"]

        def check() -> None:
            res, rows = monitor.check(profile, corpus=[str(data)], model=lm, progress=False)
            assert len(rows) == a.records, len(rows)

        def bare() -> None:
            bare_forward(lm, texts, batch_size, max_length)

        check()  # warm: the first call pays for imports and allocator growth
        bare()
        times: dict[str, list[float]] = {"check": [], "bare": []}
        for _ in range(a.rounds):
            for name, fn in (("bare", bare), ("check", check)):
                t0 = time.perf_counter()
                fn()
                times[name].append(time.perf_counter() - t0)
    med = {k: statistics.median(v) for k, v in times.items()}
    row = {"model": a.model, "records": a.records, "batch_size": batch_size, "threads": a.threads,
           "rounds": a.rounds, "check_s": round(med["check"], 2), "bare_s": round(med["bare"], 2),
           "check_records_per_s": round(a.records / med["check"], 1),
           "bare_records_per_s": round(a.records / med["bare"], 1), "ratio": round(med["check"] / med["bare"], 2),
           "command": " ".join(["bench/monitor_check_speed.py", *sys.argv[1:]])}
    print(json.dumps(row))
    if a.out is not None:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(row, indent=2) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
