"""Running one scan in several processes (``torchrun``): who computes which sample, and merging their results.

Under ``torchrun`` (``WORLD_SIZE`` > 1 in the environment) the process group is created once, with ``nccl`` when
the process has a CUDA device and ``gloo`` otherwise; without it everything here is a no-op on one process.
Sample ``i`` of the seeded global stream belongs to rank ``i mod world``; ranks advance in rounds of the same
global samples, so every collective is called by every rank the same number of times.
"""

from __future__ import annotations

import atexit
import gc
import os
import time
from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np
import torch
import torch.distributed as dist

from headlab.errors import HeadlabError


@dataclass(frozen=True)
class World:
    rank: int = 0
    size: int = 1

    @property
    def main(self) -> bool:
        return self.rank == 0

    def mine(self, index: int) -> bool:
        return index % self.size == self.rank

    def all_sum(self, arrays: Sequence[np.ndarray]) -> list[np.ndarray]:
        """Element-wise sums over ranks (float64 and int64 exactly as sent)."""
        if self.size == 1:
            return [a.copy() for a in arrays]

        out = []
        for a in arrays:
            t = torch.tensor(a, device=_device())  # a copy: all_reduce works in place, the caller's array stays
            dist.all_reduce(t)
            out.append(t.cpu().numpy())
        return out

    def all_gather(self, obj: Any) -> list[Any]:
        """Every rank's ``obj``, in rank order (picklable objects; the payloads here are small)."""
        if self.size == 1:
            return [obj]

        out: list[Any] = [None] * self.size
        dist.all_gather_object(out, obj)
        return out

    def barrier(self) -> None:
        if self.size > 1:

            dist.barrier()


def _device() -> Any:

    return torch.device("cuda", torch.cuda.current_device()) if dist.get_backend() == "nccl" else torch.device("cpu")


def world() -> World:
    """This process's place in the job: joins the process group on first use under torchrun."""
    size = int(os.environ.get("WORLD_SIZE", "1"))
    if size == 1:
        return World()

    if not dist.is_initialized():
        backend = "nccl" if torch.cuda.is_available() else "gloo"
        if backend == "nccl":
            torch.cuda.set_device(int(os.environ.get("LOCAL_RANK", "0")))
        dist.init_process_group(backend)
        atexit.register(_leave)
    return World(dist.get_rank(), dist.get_world_size())


def _leave() -> None:
    """Free what still uses the process group, then the group, while the interpreter is whole. A DDP wrapper
    that only reference cycles keep is otherwise destroyed during finalization, and a two-process gloo run then
    aborted about one exit in twelve ('terminate called without an active exception'; 0 in 60 with this)."""
    gc.collect()
    if dist.is_initialized():
        dist.destroy_process_group()


def device_for(requested: str, w: World) -> str:
    """Under torchrun with CUDA, each process takes its local GPU unless a device is named explicitly."""
    if w.size > 1 and requested in ("auto", "cuda"):

        if torch.cuda.is_available():
            return f"cuda:{int(os.environ.get('LOCAL_RANK', '0'))}"
    return requested


#: how long the machine's busy cores are sampled before a command chooses its threads (/proc/stat counts in 10 ms
#: ticks: 10 of them on 2 cores, enough to tell a busy core from an idle one)
LOAD_WINDOW_S = 0.05


def busy_cores(window: float = LOAD_WINDOW_S) -> float | None:
    """The cores other processes keep busy now: the machine's non-idle share of CPU time over ``window`` seconds
    (``/proc/stat``), times its cores; None where that file is not there. Not the 1-minute load average, which
    still counts a command that has just finished: two commands run back to back on 2 cores, the second took one
    thread and ran a third slower (a 5-draw ablation 37.3 s against 27.7 s with --threads 2)."""

    def times() -> tuple[int, int] | None:
        try:
            with open("/proc/stat", encoding="ascii") as f:
                fields = [int(x) for x in f.readline().split()[1:]]
        except (OSError, ValueError):
            return None
        idle = fields[3] + (fields[4] if len(fields) > 4 else 0)  # idle and waiting for I/O
        return idle, sum(fields[:8])  # guest time is counted in user time already

    first = times()
    time.sleep(window)
    last = times()
    if first is None or last is None or last[1] <= first[1]:
        return None
    busy = 1.0 - (last[0] - first[0]) / (last[1] - first[1])
    return max(0.0, busy) * (os.cpu_count() or 1)


def usable_cores() -> int:
    """The cores of this process's affinity mask, which a container or ``taskset`` narrows."""
    return len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else (os.cpu_count() or 1)


def spare_cores() -> tuple[int, int, float]:
    """(cores this process may use, cores it should use, the load other processes put on them): the usable cores
    less the cores busy now (:func:`busy_cores`; the 1-minute load average where it cannot be read), at least
    one."""
    cores = usable_cores()
    load = busy_cores()
    if load is None:
        load = os.getloadavg()[0] if hasattr(os, "getloadavg") else 0.0
    return cores, max(1, min(cores, int(cores - load + 0.5))), load


def check_threads(threads: int) -> int:
    """``threads`` when this process has that many cores: torch sizes its pool by it (4096 threads crash the
    process, a million exhaust its memory), and a thread beyond the cores only waits for one."""
    cores = usable_cores()
    if not 1 <= threads <= cores:
        raise HeadlabError(f"--threads {threads}: this process may use {cores} core(s); give 1 to {cores}")
    return threads


def use_threads(threads: int | None) -> tuple[int, str | None]:
    """Set torch's intra-op threads to ``threads``; None: :func:`default_threads`. Returns the number set and, when
    the default chose fewer than the cores or could not take the environment's number, the line that says why."""
    n, said = (check_threads(threads), None) if threads is not None else default_threads()
    torch.set_num_threads(n)
    return n, said


def default_threads() -> tuple[int, str | None]:
    """``OMP_NUM_THREADS`` where the environment sets it (as torch itself and ``torchrun``, which gives each of
    several workers one, mean it), else what the machine can give (:func:`spare_cores`, sampled only then): a busy
    machine shared with other jobs is slowed, not sped up, by more threads than free cores."""
    cores = usable_cores()
    given = os.environ.get("OMP_NUM_THREADS", "").strip()
    if given.isdigit() and 1 <= int(given) <= cores:
        return int(given), None
    _, spare, load = spare_cores()
    if given:
        return spare, (f"OMP_NUM_THREADS={given} is not a number of threads from 1 to this process's {cores} "
                       f"core(s); {spare} chosen by the machine's load instead; --threads N to choose")
    if spare < cores:
        return spare, (f"{spare} of {cores} cores: the machine's load is {load:.1f} from other work; --threads N "
                       "to choose")
    return spare, None
