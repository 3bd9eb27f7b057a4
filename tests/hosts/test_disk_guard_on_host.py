"""The disk_guard role over SSH onto a broker host of a fleet (no quota plugin, no Ansible on the hosts): the guard runs
under systemd as its own unprivileged user from its own virtual environment, and on the real brokers a producer from
this machine is throttled while a volume is full and produces freely once it is freed; the guard survives a restart of
itself and of a broker and goes on deciding; a second run of the role changes nothing; a TLS file the guard's user
cannot read fails the play, not the service; absent removes it."""

import json
import os
import re
import time

import pytest
from fleet_playbooks import changed_counts, run_playbook
from held_quotas import held_quotas

from ansible_collections.headroom.kafka.plugins.module_utils.internal_principals import PUBLISHER_CLIENT_ID
from ansible_collections.headroom.kafka.plugins.module_utils.kafka_adapter import KafkaAdapter, KafkaAdapterError
from kafka_testbed.prometheus_text import sample
from kafka_testbed.traffic import create_topic, produce, wait_until

PLAYBOOK = os.path.join(os.path.dirname(os.path.abspath(__file__)), "disk_guard.yml")
SERVICE = "headroom-disk-guard"
USER = "headroom-guard"
VENV = "/opt/headroom-disk-guard/venv"
METRICS = "/var/lib/node_exporter/textfile_collector/headroom_guard.prom"
CONFIG = "/etc/headroom-disk-guard/config.json"
GUARD_HOST = 1  # the fleet's first broker host (the playbook's kafka[0])
FILLED = 2  # the broker whose volume fills
BASE_RATE = 1 << 20  # default_producer_byte_rate: every producer's rate at factor 1, bytes/s
RATIO = 0.25  # min_available_ratio, of the fleet's 64 MiB volumes
LEFT_WHEN_FULL = 4 << 20  # a ratio of 1/16, past the limit
INTERVAL = 2
REACTION = INTERVAL * 3 + 20  # a decision's interval, reading the volumes and applying the quotas, with room
TOPIC = "guarded"
# The guard publishes its observations here too, from the wheel the role installs (kafka-python, no confluent-kafka).
SNAPSHOT_TOPIC = "__headroom_volume_usage"
OPTIONS = {
    "policy": "strimzi",
    "min_available_ratio": RATIO,
    "default_producer_byte_rate": BASE_RATE,
    "excluded_principals": ["User:ops"],
}
UNLIMITED = (1 << 63) - 1
# As User:ANONYMOUS (PLAINTEXT) the snapshot publisher is kept out of the throttle by its client id.
DECLARED = {
    "user=<default>": {"producer_byte_rate": BASE_RATE},
    f"user=<default>,client_id={PUBLISHER_CLIENT_ID}": {"producer_byte_rate": UNLIMITED},
    "user=ops": {"producer_byte_rate": UNLIMITED},
}
PAUSED = dict(DECLARED, **{"user=<default>": {"producer_byte_rate": 1}})


def apply_role(fleet, directory, name, **variables):
    path = os.path.join(directory, f"{name}.json")
    settings = {
        "disk_guard_test_options": OPTIONS,
        "disk_guard_interval": INTERVAL,
        "disk_guard_metrics_file": METRICS,
        "disk_guard_snapshot_topic": SNAPSHOT_TOPIC,
        **variables,
    }
    with open(path, "w", encoding="utf-8") as handle:
        json.dump(settings, handle)
    return run_playbook(fleet.info["inventory"], PLAYBOOK, "-e", f"@{path}")


def main_pid(fleet):
    return int(fleet.systemctl(GUARD_HOST, "show", "-p", "MainPID", "--value", SERVICE).strip())


def unit_property(fleet, name):
    return fleet.unit_property(GUARD_HOST, SERVICE, name)


def held(fleet):
    return held_quotas(fleet.info["bootstrap_servers"])


def metrics_file(fleet):
    return fleet.exec(GUARD_HOST, "cat", METRICS, check=False)


def snapshot_messages(fleet):
    """The snapshot topic's messages, or none while the guard has not created it yet."""
    adapter = KafkaAdapter(fleet.info["bootstrap_servers"])
    try:
        return adapter.read_all(SNAPSHOT_TOPIC)
    except KafkaAdapterError:
        return []
    finally:
        adapter.close()


def newest_published_free_ratio(fleet, broker_id):
    """The free share of ``broker_id``'s volume in the newest snapshot message of that broker, or None."""
    newest = None
    for key, value, _timestamp in snapshot_messages(fleet):
        if key == str(broker_id).encode():
            newest = json.loads(value)
    if not newest or not newest["Volumes"]:
        return None
    volume = newest["Volumes"][0]
    return 1 - volume["Consumed"] / volume["Capacity"]


def wait_for_quotas(fleet, expected, what):
    wait_until(lambda: held(fleet) == expected, REACTION, what=what)


def produces_freely(fleet):
    measured = produce(fleet, TOPIC, seconds=4)
    assert measured.rate > BASE_RATE / 4, f"the producer gets {measured.rate:.0f} B/s"


def is_throttled(fleet):
    measured = produce(fleet, TOPIC, seconds=5)
    assert measured.throttles_ms and max(measured.throttles_ms) > 1000, "produce responses carry the throttle"
    assert measured.rate_after_first_throttle() < BASE_RATE / 20


def full_then_freed(fleet):
    """Broker FILLED's volume past the limit: producers throttled; freed: producers produce freely again."""
    fleet.fill_volume(FILLED, leave_bytes=LEFT_WHEN_FULL)
    try:
        wait_for_quotas(fleet, PAUSED, "the guard holding producers at 1 byte/s")
        is_throttled(fleet)
    finally:
        fleet.free_volume(FILLED)
    wait_for_quotas(fleet, DECLARED, "the guard giving producers their declared rate back")
    produces_freely(fleet)


@pytest.fixture(scope="module")
def guarded(fleet, tmp_path_factory):
    directory = str(tmp_path_factory.mktemp("disk-guard"))
    started = time.monotonic()
    first = apply_role(fleet, directory, "first")
    assert first.returncode == 0, first.stdout[-20000:] + first.stderr[-3000:]
    print(f"disk_guard role on a bare host: {time.monotonic() - started:.1f} s")
    create_topic(fleet, TOPIC, replicas_on=GUARD_HOST)
    wait_for_quotas(fleet, DECLARED, "the declared quota set")
    return {"directory": directory, "first": first}


def test_the_guard_runs_as_its_own_user_from_its_virtual_environment(fleet, guarded):
    pid = main_pid(fleet)
    assert fleet.exec(GUARD_HOST, "ps", "-o", "user=", "-p", str(pid)).strip() == USER
    command = fleet.exec(GUARD_HOST, "cat", f"/proc/{pid}/cmdline").split("\0")
    assert command[:2] == [f"{VENV}/bin/python", f"{VENV}/bin/headroom-guard"]
    assert command[2:4] == ["--config", CONFIG]
    account = fleet.exec(GUARD_HOST, "getent", "passwd", USER).strip().split(":")
    assert account[5:] == ["/var/lib/headroom-disk-guard", "/usr/sbin/nologin"], "no login shell"
    importable = fleet.exec(
        GUARD_HOST,
        f"{VENV}/bin/python",
        "-c",
        "import importlib.util as u; "
        "print([m for m in ('ansible', 'yaml', 'headroom_pipeline', 'confluent_kafka') if u.find_spec(m)])",
        user=USER,
    )
    assert importable.strip() == "[]", "neither Ansible nor PyYAML nor the pipeline nor confluent-kafka in its venv"
    # Its observations on the snapshot topic, created by the guard (compacted, keyed by broker id).
    published = wait_until(lambda: snapshot_messages(fleet), REACTION, what="the guard's snapshot messages")
    assert {key for key, _value, _timestamp in published} == {str(entry["id"]).encode() for entry in fleet.broker_nodes}
    status = fleet.exec(GUARD_HOST, "cat", f"/proc/{pid}/status")
    assert re.search(r"^NoNewPrivs:\s+1$", status, re.M) and re.search(r"^Seccomp:\s+2$", status, re.M)
    assert re.search(r"^CapEff:\s+0+$", status, re.M), "no capability"
    assert unit_property(fleet, "ProtectSystem") == "strict" and unit_property(fleet, "PrivateTmp") == "yes"
    # Its state and its metrics file, written through the unit's only writable paths.
    wait_until(
        lambda: sample(metrics_file(fleet), "headroom_guard_throttle_factor") == 1, REACTION, what="the metrics file"
    )
    state = fleet.exec(GUARD_HOST, "stat", "-c", "%U %a", "/var/lib/headroom-disk-guard/state.json").split()
    assert state == [USER, "600"]
    assert fleet.exec(GUARD_HOST, "stat", "-c", "%U %a", CONFIG).split() == [USER, "600"]
    # Its history (the role's default directory), one decision per line and one snapshot message per broker.
    history = "/var/lib/headroom-disk-guard/history"
    assert fleet.exec(GUARD_HOST, "stat", "-c", "%U %a", history).split() == [USER, "750"]
    decisions = fleet.exec(GUARD_HOST, "sh", "-c", f"cat {history}/decisions-*.jsonl").splitlines()
    assert decisions and json.loads(decisions[-1])["Mode"] == "enforce"
    observed = [
        json.loads(line) for line in fleet.exec(GUARD_HOST, "sh", "-c", f"cat {history}/snapshots-*.jsonl").splitlines()
    ]
    assert {message["BrokerId"] for message in observed} == {1, 2, 3}


def test_a_full_volume_throttles_a_producer_and_freeing_it_lifts_the_throttle(fleet, guarded):
    produces_freely(fleet)
    full_then_freed(fleet)
    assert 'headroom_guard_decisions_total{outcome="applied"}' in metrics_file(fleet)
    # The guard published as User:ANONYMOUS, paused with every producer: a publication the broker held never held the
    # guard's decisions (it gave the rate back above), and the newest observation of the freed volume follows.
    wait_until(
        lambda: (newest_published_free_ratio(fleet, FILLED) or 0) > RATIO,
        REACTION,
        what="the freed volume's observation on the snapshot topic",
    )


def test_the_guard_survives_its_own_restart_and_still_decides(fleet, guarded):
    before = main_pid(fleet)
    fleet.systemctl(GUARD_HOST, "restart", SERVICE)
    wait_until(
        lambda: unit_property(fleet, "ActiveState") == "active" and main_pid(fleet) != before, 30, what="restart"
    )
    full_then_freed(fleet)


def test_the_guard_survives_a_broker_restart_and_still_decides(fleet, guarded):
    before = main_pid(fleet)
    fleet.restart(FILLED)
    assert main_pid(fleet) == before and unit_property(fleet, "ActiveState") == "active"
    wait_for_quotas(fleet, DECLARED, "the declared set while the broker came back")
    full_then_freed(fleet)
    assert main_pid(fleet) == before, "the guard reconnected, it did not restart"


def test_a_second_run_changes_nothing_and_restarts_nothing(fleet, guarded):
    before = unit_property(fleet, "InvocationID")
    second = apply_role(fleet, guarded["directory"], "second")
    assert second.returncode == 0, second.stdout[-20000:]
    assert changed_counts(second.stdout) == {"broker-1": 0}, second.stdout[-20000:]
    assert unit_property(fleet, "InvocationID") == before


UNREADABLE = "/etc/kafka/server.properties"  # the broker's properties, mode 0600: only Kafka's user may read them
READABLE = "/etc/hostname"  # --check-config reads no certificate: any file the service's user may read will do


@pytest.mark.parametrize(
    "tls, refusal",
    [
        pytest.param(
            {"ssl_cafile": UNREADABLE},
            f"ssl_cafile must be a readable file (got '{UNREADABLE}': not readable by user {USER})",
            id="unreadable-tls-file",
        ),
        pytest.param(
            {"ssl_cafile": READABLE, "ssl_certfile": READABLE, "ssl_keyfile": READABLE},
            f"--snapshot-publisher-principal is required with snapshot topic '{SNAPSHOT_TOPIC}' over a client "
            "certificate",
            id="certificate-publisher-unnamed",
        ),
    ],
)
def test_a_configuration_the_guard_refuses_fails_the_play_and_leaves_the_service_alone(fleet, guarded, tls, refusal):
    """The guard checks a new configuration as the service's user, with the service's command line: a file only
    Kafka's user may read would fail every decision of the service, and a snapshot publisher the guard cannot keep out
    of the throttle would be held with every producer; each fails the play instead."""
    before, config = unit_property(fleet, "InvocationID"), fleet.exec(GUARD_HOST, "cat", CONFIG)
    options = dict(OPTIONS, security_protocol="SSL", **tls)
    refused = apply_role(fleet, guarded["directory"], "refused", disk_guard_test_options=options)
    assert refused.returncode != 0
    assert refusal in refused.stdout, refused.stdout[-6000:]
    assert fleet.exec(GUARD_HOST, "cat", CONFIG) == config and unit_property(fleet, "InvocationID") == before
    wait_for_quotas(fleet, DECLARED, "the running guard still deciding")


def test_a_broker_cut_off_from_the_others_makes_the_guard_apply_its_missing_data_action(fleet, guarded):
    """Graded policy, missing_data_action pause: a broker whose host drops off the network is fenced, the guard's view
    is incomplete, and producers are held at the floor until the broker is back."""
    graded = dict(
        OPTIONS,
        policy="graded",
        soft_limit={"type": "min_free_percentage", "level": 20},
        hard_limit={"type": "min_free_percentage", "level": 5},
        missing_data_action="pause",
    )
    graded.pop("min_available_ratio")
    applied = apply_role(fleet, guarded["directory"], "graded", disk_guard_test_options=graded)
    assert applied.returncode == 0, applied.stdout[-20000:]
    wait_for_quotas(fleet, DECLARED, "the declared set under the graded policy")
    cut_off = 3
    fleet.cut_network(cut_off)
    try:
        # The broker is fenced after its session timeout; the guard's request to it runs into its own timeout first.
        wait_until(lambda: held(fleet) == PAUSED, 120, what="the guard pausing producers while a broker is missing")
        assert sample(metrics_file(fleet), "headroom_guard_missing_data_applied") == 1
    finally:
        fleet.restore_network(cut_off)
    wait_until(lambda: cut_off in fleet.unfenced_brokers(), 90, what="the broker back once reconnected")
    wait_for_quotas(fleet, DECLARED, "the declared set once every broker is back")


def test_absent_removes_the_guard_and_keeps_its_user(fleet, guarded):
    removed = apply_role(fleet, guarded["directory"], "absent", disk_guard_state="absent")
    assert removed.returncode == 0, removed.stdout[-20000:]
    assert fleet.systemctl(GUARD_HOST, "is-active", SERVICE, check=False).strip() in ("inactive", "unknown")
    for path in (
        "/etc/systemd/system/headroom-disk-guard.service",
        "/opt/headroom-disk-guard",
        "/etc/headroom-disk-guard",
        "/var/lib/headroom-disk-guard",
        METRICS,
    ):
        assert not exists(fleet, path), path
    assert fleet.exec(GUARD_HOST, "getent", "passwd", USER).startswith(f"{USER}:")


def exists(fleet, path):
    return fleet.path_exists(GUARD_HOST, path)
