"""Under torchrun with CUDA, the scan and the trainer take a process's GPU by one rule (headlab.distributed.device_for):
its node's GPU, LOCAL_RANK. Two nodes of two GPUs, simulated: the global rank 3 names a GPU the node lacks."""

from __future__ import annotations

import inspect

import pytest
import torch

from headlab.distributed import World, device_for


@pytest.fixture
def second_node(monkeypatch):
    monkeypatch.setenv("RANK", "3")
    monkeypatch.setenv("LOCAL_RANK", "1")
    monkeypatch.setenv("WORLD_SIZE", "4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    return World(rank=3, size=4)


@pytest.mark.parametrize("requested", ["cuda", "auto"])
def test_a_process_on_the_second_node_takes_its_local_gpu(second_node, requested):
    assert device_for(requested, second_node) == "cuda:1"


def test_a_named_device_and_a_single_process_keep_what_was_asked(second_node):
    assert device_for("cuda:0", second_node) == "cuda:0"
    assert device_for("cpu", second_node) == "cpu"
    assert device_for("cuda", World()) == "cuda"


def test_the_trainer_takes_its_device_by_the_same_rule():
    """The trainer's choice goes through device_for (it took cuda:{rank} before: cuda:3 on a node of two)."""
    from headlab.training.trainer import Trainer

    src = inspect.getsource(Trainer.__init__)
    assert "device_for(device, self._world)" in src and "cuda:{self.rank}" not in src
