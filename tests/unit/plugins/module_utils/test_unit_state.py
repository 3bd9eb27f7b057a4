"""Whether a restarted systemd unit still runs the invocation that was started, from systemctl show."""

import pytest

from ansible_collections.headroom.kafka.plugins.module_utils.unit_state import gone, main_exit, parse_show

STARTED = {"ActiveState": "active", "SubState": "running", "InvocationID": "a1", "NRestarts": "0"}


def test_parse_show_reads_key_value_lines():
    text = "ActiveState=failed\nSubState=failed\nResult=exit-code\nExecMainStatus=1\nEnvironment=A=b\n\n"
    assert parse_show(text) == {
        "ActiveState": "failed",
        "SubState": "failed",
        "Result": "exit-code",
        "ExecMainStatus": "1",
        "Environment": "A=b",
    }


@pytest.mark.parametrize(
    "now, said",
    [
        # Still the invocation that was started: running, or still coming up (Type=notify, forking).
        (dict(STARTED), None),
        (dict(STARTED, ActiveState="activating", SubState="start"), None),
        # Restart=no: the JVM exited on a bad property.
        (
            dict(
                STARTED,
                ActiveState="failed",
                SubState="failed",
                Result="exit-code",
                ExecMainCode="1",
                ExecMainStatus="1",
            ),
            "the unit is failed (failed, result exit-code): its main process exited with status 1",
        ),
        # Exit status 143 with SuccessExitStatus: stopped, inactive.
        (
            dict(
                STARTED,
                ActiveState="inactive",
                SubState="dead",
                Result="success",
                ExecMainCode="1",
                ExecMainStatus="143",
            ),
            "the unit is inactive (dead, result success): its main process exited with status 143",
        ),
        # Restart=on-failure: waiting to be started again.
        (
            dict(
                STARTED,
                ActiveState="activating",
                SubState="auto-restart",
                NRestarts="1",
                ExecMainCode="1",
                ExecMainStatus="1",
            ),
            "its main process exited with status 1 and systemd is about to start it again (restarts so far: 1)",
        ),
        # Restart=on-failure, already started again: another invocation.
        (
            dict(STARTED, InvocationID="b2", NRestarts="1", ExecMainCode="2", ExecMainStatus="9"),
            "its main process was killed by signal 9 and systemd started it again (restarts so far: 1)",
        ),
    ],
)
def test_gone(now, said):
    assert gone(STARTED, now) == said


def test_a_unit_without_invocation_ids_is_judged_by_its_state():
    """systemd before 232 has no InvocationID: no new-invocation check, the state still counts."""
    assert gone({"ActiveState": "active"}, {"ActiveState": "active"}) is None
    assert gone({"ActiveState": "active"}, {"ActiveState": "failed"}).startswith("the unit is failed")


def test_main_exit_without_a_recorded_exit():
    assert main_exit({}) == "its main process ended"
