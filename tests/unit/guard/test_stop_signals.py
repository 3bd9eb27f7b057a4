"""A process whose loop waits on the stop Event between its steps stops on SIGTERM, wherever the signal finds it.

The loop below waits with a timeout of 0, so the main thread is inside the Event's lock a large part of the time: with
an Event set from a plain signal handler, most of these processes would never stop."""

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
PLAIN_HANDLER = textwrap.dedent(
    """
    import signal, threading
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    print("waiting", flush=True)
    while not stop.wait(0):
        pass
    print("stopped", flush=True)
    """
)


def stopped_within(program, seconds):
    """Start ``program``, send SIGTERM once it waits; whether it printed 'stopped' and exited within ``seconds``."""
    process = subprocess.Popen(
        [sys.executable, "-c", program], cwd=ROOT, stdout=subprocess.PIPE, text=True, start_new_session=True
    )
    try:
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


def test_the_plain_handler_it_replaces_misses_sigterm_in_the_same_loop():
    """The witness that the test above can fail: Event.set in a handler waits for its own thread in this loop."""
    assert any(not stopped_within(PLAIN_HANDLER, 2) for _attempt in range(ATTEMPTS))
