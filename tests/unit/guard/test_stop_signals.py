"""A process whose loop waits on the stop Event between its steps stops on SIGTERM, wherever the signal finds it.

The loop below waits with a timeout of 0, so the main thread is inside the Event's lock a large part of the time: with
an Event set from a plain signal handler, many of these processes would never stop. Whether a signal finds the lock
held is chance, so the witness that a plain handler hangs, and its counterpart for ours, deliver the signal while the
main thread holds the Event's lock (as ``Event.wait`` does) and are certain."""

import os
import signal
import subprocess
import sys
import textwrap

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
ATTEMPTS = 20
LOOP = textwrap.dedent(
    """
    from headroom_guard.stop_signals import stop_event
    stop = stop_event()
    print("waiting", flush=True)
    while not stop.wait(0):
        pass
    print("stopped", flush=True)
    """
)
# The signal arrives inside the Event's own lock (a private attribute of CPython's Event, the lock Event.wait holds);
# time.sleep is interrupted by it, runs the Python handler there, between two bytecodes, and sleeps on.
SIGNAL_INSIDE_THE_LOCK = """
    import os, time
    with stop._cond:
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.5)
    if stop.wait(10):
        print("stopped", flush=True)
"""
OURS_INSIDE_THE_LOCK = textwrap.dedent(
    """
    import signal
    from headroom_guard.stop_signals import stop_event
    stop = stop_event()
    """
    + SIGNAL_INSIDE_THE_LOCK
)
PLAIN_HANDLER_INSIDE_THE_LOCK = textwrap.dedent(
    """
    import signal, threading
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    """
    + SIGNAL_INSIDE_THE_LOCK
)


def stopped_within(program, seconds, send_sigterm=True):
    """Start ``program``, send SIGTERM once it waits (or let it send its own); whether it printed 'stopped' and exited
    within ``seconds``."""
    process = subprocess.Popen(
        [sys.executable, "-c", program], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
        if send_sigterm:
            assert process.stdout.readline() == "waiting\n"
            process.send_signal(signal.SIGTERM)
        try:
            out = process.communicate(timeout=seconds)[0]
        except subprocess.TimeoutExpired:
            return False
        return out == "stopped\n" and process.returncode == 0
    finally:
        if process.poll() is None:
            process.kill()
            process.communicate()


def test_every_process_stops_on_sigterm_in_a_loop_that_waits_on_the_event():
    results = [stopped_within(LOOP, 20) for _attempt in range(ATTEMPTS)]
    assert all(results), f"{results.count(False)} of {ATTEMPTS} processes did not stop on SIGTERM"


def test_a_sigterm_that_arrives_while_the_main_thread_holds_the_events_lock_stops_the_process():
    assert stopped_within(OURS_INSIDE_THE_LOCK, 20, send_sigterm=False)


def test_the_plain_handler_it_replaces_hangs_on_a_sigterm_that_arrives_inside_the_events_lock():
    """The witness that the tests above can fail: Event.set in a handler waits for the lock its own thread holds."""
    assert not stopped_within(PLAIN_HANDLER_INSIDE_THE_LOCK, 5, send_sigterm=False)
