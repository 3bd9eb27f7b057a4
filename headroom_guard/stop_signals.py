"""An Event that SIGTERM and SIGINT set, without the signal handler taking a lock.

``threading.Event.set`` takes the Event's lock. Python runs a signal handler in the main thread between two bytecodes,
also while that thread holds the same lock inside ``Event.wait``; a handler that calls ``set`` then waits for its own
thread forever, and the process ignores every later SIGTERM. A loop that waits on the Event between its steps is
inside that lock at the moment a signal sent right after a step arrives, so this is not rare. Here the handler does
nothing in Python: the interpreter's own C handler writes the signal's number to a pipe (``signal.set_wakeup_fd``),
and a thread that reads the pipe sets the Event."""

from __future__ import annotations

import os
import signal
import threading
from collections.abc import Iterable
from types import FrameType

STOP_SIGNALS = (signal.SIGTERM, signal.SIGINT)


def _nothing(_signum: int, _frame: FrameType | None) -> None:
    """The Python handler: installed so that the signal no longer ends the process; the pipe carries it."""


def stop_event(signals: Iterable[signal.Signals] = STOP_SIGNALS) -> threading.Event:
    """An Event set once any of ``signals`` arrives. Call it from the main thread, once per process (a process has
    one wakeup file descriptor)."""
    numbers = {int(number) for number in signals}
    stop = threading.Event()
    read_end, write_end = os.pipe()
    os.set_blocking(write_end, False)  # the C handler must never block; a full pipe loses only repeated signals
    signal.set_wakeup_fd(write_end, warn_on_full_buffer=False)

    def watch() -> None:
        while True:
            arrived = os.read(read_end, 64)
            if numbers.intersection(arrived):
                stop.set()

    threading.Thread(target=watch, name="stop-signals", daemon=True).start()
    for number in numbers:
        signal.signal(number, _nothing)
    return stop
