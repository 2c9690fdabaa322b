"""A block run whole under interrupts: SIGINT and SIGTERM that arrive inside interrupts.deferred are raised when it
ends, as they would have been outside it, and the block's every line has run."""

from __future__ import annotations

import os
import signal

import pytest

from headlab.interrupts import Terminated, deferred, sigterm_as_interrupt


@pytest.mark.parametrize("sig,raised", [(signal.SIGTERM, Terminated), (signal.SIGINT, KeyboardInterrupt)])
def test_a_signal_inside_the_block_is_raised_after_it(sig, raised):
    ran = []
    with sigterm_as_interrupt():
        with pytest.raises(raised):
            with deferred():
                os.kill(os.getpid(), sig)
                ran.append("after the signal")  # a step that must not stop half-way
        assert ran == ["after the signal"]
        with deferred():  # the handlers are back: a quiet block raises nothing
            ran.append("quiet")
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
