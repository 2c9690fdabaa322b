"""How often a two-process gloo job aborts at exit when its DDP wrapper outlives the code that used it: the process
group joined by ``torch.distributed`` directly against one joined through ``headlab.distributed.world``, which
frees such wrappers and leaves the group while the interpreter is whole.

    .venv/bin/python bench/ddp_exit.py --runs 60 --out results/training/ddp_exit.json

Each run is ``torchrun --nproc_per_node=2`` of this file in ``--child`` mode: a DDP-wrapped linear layer held in a
reference cycle takes five backward passes and a barrier, and the process exits.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "src"))


def child(join: str) -> None:
    import torch
    import torch.distributed as dist
    from torch.nn.parallel import DistributedDataParallel

    if join == "headlab":
        from headlab.distributed import world

        world()
    else:
        dist.init_process_group("gloo")
    held: dict = {"net": DistributedDataParallel(torch.nn.Linear(64, 64))}
    held["self"] = held  # only the collector frees it, as with a trainer that refers to itself
    for _ in range(5):
        held["net"](torch.randn(8, 64)).sum().backward()
    dist.barrier()


def aborts(join: str, runs: int, port: int) -> int:
    env = {**os.environ, "OMP_NUM_THREADS": "1"}
    failed = 0
    for i in range(runs):
        r = subprocess.run([sys.executable, "-m", "torch.distributed.run", "--nproc_per_node=2",
                            f"--master_port={port + i}", __file__, "--child", join],
                           env=env, capture_output=True, text=True, timeout=120)
        failed += r.returncode != 0
    return failed


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--runs", type=int, default=60)
    p.add_argument("--port", type=int, default=36100)
    p.add_argument("--child", choices=("torch", "headlab"))
    p.add_argument("--out", type=Path)
    a = p.parse_args()
    if a.child:
        child(a.child)
        return
    t0, record = time.time(), {"runs": a.runs, "aborted": {}}
    for join in ("torch", "headlab"):
        record["aborted"][join] = aborts(join, a.runs, a.port)
        print(f"{join}: {record['aborted'][join]} of {a.runs} runs aborted at exit", flush=True)
    record["wall_s"] = round(time.time() - t0, 1)
    if a.out:
        a.out.parent.mkdir(parents=True, exist_ok=True)
        a.out.write_text(json.dumps(record, indent=2) + "\n")


if __name__ == "__main__":
    main()
