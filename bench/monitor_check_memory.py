"""Peak memory and time of ``headlab monitor check`` against the number of records: a JSONL dataset of N and
10N short records (one window each), checked against one profile, each check in a fresh process.

    .venv/bin/python bench/monitor_check_memory.py [--records 1000] [--model minilm-l6]

Prints per size the wall time, records per second and peak RSS, and the memory each further 1000 records cost.
The scoring holds one bucket of fingerprints at a time (headlab.monitor.scoring); what still grows with the
records is the corpus's index of them (an offset and a name each) and one score and flag each; nothing grows
with the windows (bench/monitor_memory.py).
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import time
from pathlib import Path

CHILD = """
import resource, sys
from headlab.cli import main
code = main(sys.argv[1:])
print("PEAK", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024, code)
"""


def dataset(path: Path, n: int) -> None:
    from headlab.corpus import documents

    texts = [t for d in documents(["wiki"])[:500] for t in d.load()]
    with path.open("w") as fh:
        for i in range(n):
            words = texts[i % len(texts)].split()[:24]  # short records: one window each
            fh.write(json.dumps({"id": f"r{i}", "text": " ".join(words)}) + "\n")


def check(profile: Path, data: Path, out: Path) -> tuple[float, float]:
    t0 = time.time()
    r = subprocess.run([sys.executable, "-c", CHILD, "monitor", "check", str(profile), "--corpus", str(data),
                        "--out", str(out), "--no-progress"], capture_output=True, text=True)
    line = [x for x in r.stdout.splitlines() if x.startswith("PEAK")]
    if r.returncode or not line or line[0].split()[2] != "0":
        raise SystemExit(r.stderr[-2000:])
    return time.time() - t0, float(line[0].split()[1])


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--records", type=int, default=1000)
    ap.add_argument("--model", default="minilm-l6")
    a = ap.parse_args()
    from headlab.cli import main as cli

    with tempfile.TemporaryDirectory() as tmp:
        profile = Path(tmp) / "profile"
        assert cli(["monitor", "fit", a.model, "--corpus", "wiki", "--max-samples", "300", "--out", str(profile),
                    "--no-progress"]) == 0
        sizes, peaks = (a.records, 10 * a.records), []
        for n in sizes:
            data = Path(tmp) / f"d{n}.jsonl"
            dataset(data, n)
            wall, peak = check(profile, data, Path(tmp) / f"out{n}")
            peaks.append(peak)
            print(f"{n:>8} records: {wall:7.1f} s ({n / wall:6.1f} records/s), peak RSS {peak:7.0f} MiB")
        per = (peaks[1] - peaks[0]) / (sizes[1] - sizes[0]) * 1000
        print(f"10N / N peak RSS {peaks[1] / peaks[0]:.2f}; {per:.2f} MiB per further 1000 records")


if __name__ == "__main__":
    main()
