# -*- coding: utf-8 -*-
# Copyright: contributors to the headroom.kafka collection
# GNU General Public License v3.0+ (see LICENSE or https://www.gnu.org/licenses/gpl-3.0.txt)
"""Whether a systemd unit restarted a moment ago is still the process that was started, from ``systemctl show``.

A Kafka unit of Type=simple is "active" as soon as the JVM is forked, so ``systemctl restart`` succeeds also for a
broker that exits a second later on a bad property; with Restart=on-failure it even comes back as a new invocation
that dies again. node_started polls these properties so that such a node fails the roll at once.
"""

from __future__ import absolute_import, division, print_function

__metaclass__ = type

from typing import Dict, Optional

# What node_started reads (systemctl show --property=...).
PROPERTIES = ("ActiveState", "SubState", "Result", "InvocationID", "NRestarts", "ExecMainCode", "ExecMainStatus")

# ExecMainCode is the si_code of the main process' last exit (CLD_EXITED and the signal codes).
EXIT_CODES = {"1": "exited with status", "2": "was killed by signal", "3": "dumped core on signal"}


def parse_show(text: str) -> Dict[str, str]:
    """``systemctl show --property=...`` output (Key=Value lines) as a dict; a value may hold '='."""
    state = {}
    for line in text.splitlines():
        key, sep, value = line.partition("=")
        if sep:
            state[key.strip()] = value.strip()
    return state


def main_exit(state: Dict[str, str]) -> str:
    """How the unit's main process last ended, in words, when systemd recorded it."""
    code, status = state.get("ExecMainCode", "0"), state.get("ExecMainStatus", "")
    if code in EXIT_CODES:
        return "its main process {0} {1}".format(EXIT_CODES[code], status)
    return "its main process ended"


def gone(started: Dict[str, str], now: Dict[str, str]) -> Optional[str]:
    """Why the invocation that ``started`` describes is no longer running, or None while it is (or is still coming up).

    Gone means: the unit failed or stopped, systemd waits to restart it (Restart=on-failure's auto-restart), or
    another invocation runs (it was restarted since, so the one started has died at least once)."""
    if now.get("SubState") == "auto-restart":
        return "{0} and systemd is about to start it again (restarts so far: {1})".format(
            main_exit(now), now.get("NRestarts", "?")
        )
    if now.get("ActiveState") in ("failed", "inactive", "deactivating"):
        return "the unit is {0} ({1}, result {2}): {3}".format(
            now.get("ActiveState"), now.get("SubState", "unknown"), now.get("Result", "unknown"), main_exit(now)
        )
    if started.get("InvocationID") and now.get("InvocationID") != started.get("InvocationID"):
        return "{0} and systemd started it again (restarts so far: {1})".format(
            main_exit(now), now.get("NRestarts", "?")
        )
    return None
