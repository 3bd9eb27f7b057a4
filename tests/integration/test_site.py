"""playbooks/site.yml against a test cluster: what the brokers serve once it configured the quota plugin and the JMX
exporter, the settings and brokers it refuses before changing anything, check mode, free-form plugin keys, the usage
pipeline.

That site.yml configures, rolls one broker at a time and changes nothing on a second run is the molecule scenario
default (extensions/molecule/default, with idempotence), on brokers whose Python has no Kafka client the scenario
hosts."""

import json
import os
import re

import pytest
import yaml
from ansible_plays import SPEC, changed_counts, pids, run_site, scrape, serving, write_inventory
from generic_exporter_rules import GENERIC_OBJECT_NAMES, GENERIC_RULES, GENERIC_SERIES


@pytest.fixture(scope="module")
def configured(kafka_cluster_root, tmp_path_factory):
    """One site.yml run from a bare cluster for the tests that read what it left: the quota plugin, the JMX exporter
    (kafka_jmx_exporter: true) and the usage pipeline over the snapshot topic (usage_pipeline_out). The role writes the
    exporter's rules over the configuration file the test cluster's running agents read (the drop-in and the jar go
    to a scratch directory: these nodes are not systemd units), and the roll restarts every node with the plugin."""
    from kafka_testbed.kafka_libs import ensure_libs
    from kafka_testbed.testing import ClusterFactory

    factory = ClusterFactory(kafka_cluster_root)
    try:
        cluster = factory(2, catch_up_ms=500)
        tmp_path = tmp_path_factory.mktemp("site")
        scratch = tmp_path / "host"
        out = tmp_path / "pipeline"
        inventory = write_inventory(
            cluster,
            tmp_path,
            {
                "kafka_quotas": dict(SPEC, check_interval=2),
                "kafka_jmx_exporter": True,
                "jmx_exporter_jar_source": "file",
                "jmx_exporter_jar_file": ensure_libs().agent,
                # Each node's own scratch "host": on one shared directory only the first node to write would see a
                # change.
                "jmx_exporter_dir": str(scratch) + "/{{ inventory_hostname }}/opt",
                "jmx_exporter_config_file": cluster.info["exporter_config"],
                # A generic rule file of the user's beside the role's rules: the alerts' series keep their labels.
                "jmx_exporter_extra_rules": GENERIC_RULES,
                "jmx_exporter_extra_object_names": GENERIC_OBJECT_NAMES,
                "jmx_exporter_unit_dir": str(scratch) + "/{{ inventory_hostname }}/systemd",
                "jmx_exporter_owner": os.getuid(),
                "jmx_exporter_group": os.getgid(),
                "broker_jar_cache_dir": str(tmp_path / "cache"),
                "usage_pipeline_out": str(out),
                "usage_pipeline_min_available_ratio": 0.1,
                "usage_pipeline_conf": {"spark.sql.shuffle.partitions": "2"},
            },
        )
        before = pids(cluster)
        result = run_site(inventory)
        yield {"cluster": cluster, "result": result, "before": before, "scratch": scratch, "out": out}
    finally:
        factory.close()


def test_site_with_the_jmx_exporter_serves_the_plugins_metrics_under_stable_names(configured):
    from kafka_testbed.traffic import wait_until

    cluster, first, scratch = configured["cluster"], configured["result"], configured["scratch"]
    assert first.returncode == 0, first.stdout[-15000:]
    after = pids(cluster)
    assert all(after[node_id] != pid for node_id, pid in configured["before"].items()), (
        "every node restarts to load the agent"
    )
    dropin = (scratch / "broker-1" / "systemd" / "kafka.service.d" / "headroom-jmx-exporter.conf").read_text()
    assert f"-javaagent:{scratch / 'broker-1' / 'opt' / 'jmx_prometheus_javaagent-1.0.1.jar'}=7071:" in dropin

    for entry in cluster.broker_nodes:
        node_id = str(entry["id"])
        # The plugin registers its gauges at its first storage check.
        series = wait_until(
            lambda url=entry["metrics_url"]: serving(url, "strimzi_quotas_throttle_factor"),
            30,
            what=f"broker {node_id} serving the plugin's throttle factor",
        )
        assert series["strimzi_quotas_throttle_factor"] == [({"observing_broker_id": node_id}, 1.0)]
        assert series["strimzi_quotas_produce_byte_rate"] == [({}, float(SPEC["producer_byte_rate"]))]
        available = series["strimzi_quotas_available_bytes"]
        assert {labels["log_dir"] for labels, _value in available} == {
            log_dir for node in cluster.broker_nodes for log_dir in node["log_dirs"]
        }, "every broker's log dirs, as this broker's plugin sees them"
        assert all(labels["observing_broker_id"] == node_id for labels, _value in available)
        assert series["kafka_server_kafkaserver_brokerstate"] == [({}, 3.0)]
        assert series["kafka_log_logmanager_offlinelogdirectorycount"] == [({}, 0.0)]
        assert sorted(series["kafka_log_logmanager_logdirectoryoffline"], key=str) == sorted(
            (({"log_dir": log_dir}, 0.0) for log_dir in entry["log_dirs"]), key=str
        ), "KafkaLogDirOffline's series, with its log_dir label, although generic extra rules come after the role's"
        assert GENERIC_SERIES in series, "the extra rules export what the role's rules leave out"
        assert "kafka_server_replicamanager_underreplicatedpartitions" in series
        assert not any(name.startswith("io_strimzi") or name.startswith("kafka_server_Produce") for name in series), (
            "only the role's names"
        )
    controller = next(entry for entry in cluster.info["brokers"] if "broker" not in entry["roles"])
    assert "kafka_controller_kafkacontroller_activecontrollercount" in scrape(controller["metrics_url"])


def test_site_runs_the_usage_pipeline_over_the_snapshot_topic(configured):
    cluster, result, out = configured["cluster"], configured["result"], configured["out"]
    assert result.returncode == 0, result.stdout[-15000:] + result.stderr[-5000:]
    summary = json.loads((out / "summary.json").read_text())
    servers = cluster.info["bootstrap_servers"].split(",")
    assert summary["settings"]["snapshots"].startswith(f"kafka://{','.join(servers)}/__headroom_volume_usage"), (
        "the snapshots default to the topic site.yml publishes them to"
    )
    assert summary["rows_read"] >= len(cluster.broker_nodes), "at least the snapshot this run published, one per broker"
    assert summary["rows_read"] == summary["rows_used"] + summary["rows_rejected"]
    assert (out / "decisions").is_dir()
    task = re.search(
        r"^TASK \[headroom\.kafka\.usage_pipeline : Run the pipeline job\][^\n]*\n(\w+): \[([^\]]+)\]",
        result.stdout,
        re.M,
    )
    assert task, result.stdout[-15000:]
    status, host = task.groups()
    assert (status, host.split(" -> ")[-1]) == ("ok", "localhost"), (
        "once, on the control node, and not counted as a change"
    )
    assert "Rows read {}, used {}".format(summary["rows_read"], summary["rows_used"]) in result.stdout


@pytest.fixture(scope="module")
def untouched_cluster(kafka_cluster_root):
    """For the tests after which every broker's files and processes are as they were (refusals, check mode), then for
    the module's last test, which runs site.yml on it for real (free-form plugin keys)."""
    from kafka_testbed.testing import module_cluster

    yield from module_cluster(kafka_cluster_root, 3)


GUARD = {"policy": "strimzi", "min_available_ratio": 0.1, "default_producer_byte_rate": 1048576}
KAFKA_SPEC = {"type": "kafka", "producer_byte_rate": 1048576}


@pytest.mark.parametrize(
    ("variables", "said"),
    [
        # Both volume limits: refused before any file changes.
        ({"kafka_quotas": dict(SPEC, min_available_bytes_per_volume=1000)}, "min_available"),
        # The plugin would make the brokers ignore the client quotas the guard scales.
        ({"kafka_quotas": SPEC, "kafka_disk_guard": GUARD}, "kafka_quotas.type must not be strimzi (got strimzi"),
        (
            {"kafka_quotas": KAFKA_SPEC, "kafka_disk_guard": GUARD, "kafka_disk_guard_host": "elsewhere"},
            "kafka_disk_guard_host must be a host of group kafka (got elsewhere",
        ),
    ],
    ids=["both-volume-limits", "guard-with-the-plugin", "guard-host-outside-the-group"],
)
def test_a_bad_setting_changes_nothing(untouched_cluster, tmp_path, variables, said):
    cluster = untouched_cluster
    inventory = write_inventory(cluster, tmp_path, variables)
    files = {e["properties"]: open(e["properties"], encoding="utf-8").read() for e in cluster.info["brokers"]}
    result = run_site(inventory)
    assert result.returncode != 0
    assert said in " ".join(result.stdout.split()), result.stdout[-5000:]
    assert {p: open(p, encoding="utf-8").read() for p in files} == files


def test_a_broker_that_could_not_load_the_plugin_is_neither_configured_nor_restarted(untouched_cluster, tmp_path):
    """Broker 2's libs directory has every jar of the cluster's but the plugin's (a distribution without it):
    site.yml stops before any broker's properties change, naming the host, the directory and the class, and restarts
    nothing."""
    cluster = untouched_cluster
    shipped = os.path.dirname(cluster.info["quota_plugin_jar"])
    without_plugin = tmp_path / "libs-without-plugin"
    without_plugin.mkdir()
    for name in os.listdir(shipped):
        if name.endswith(".jar") and name != os.path.basename(cluster.info["quota_plugin_jar"]):
            os.symlink(os.path.join(shipped, name), without_plugin / name)
    inventory = write_inventory(cluster, tmp_path)
    with open(inventory, encoding="utf-8") as handle:
        document = yaml.safe_load(handle)
    document["all"]["children"]["kafka"]["hosts"]["broker-2"]["kafka_libs_dir"] = str(without_plugin)
    with open(inventory, "w", encoding="utf-8") as handle:
        yaml.safe_dump(document, handle)
    files = {e["properties"]: open(e["properties"], encoding="utf-8").read() for e in cluster.info["brokers"]}
    before = pids(cluster)
    result = run_site(inventory)
    assert result.returncode != 0
    assert f"broker-2: no jar in {without_plugin} provides io.strimzi.kafka.quotas.StaticQuotaCallback" in " ".join(
        result.stdout.split()
    ), result.stdout[-5000:]
    assert {p: open(p, encoding="utf-8").read() for p in files} == files
    assert pids(cluster) == before


SECRET = "s3cret-admin-password"


def admin_with_secret(cluster):
    return {
        "bootstrap_servers": cluster.info["bootstrap_servers"],
        "security_protocol": "SASL_PLAINTEXT",
        "sasl": {"mechanism": "SCRAM-SHA-512", "username": "admin", "password": SECRET},
    }


def test_check_mode_with_diff_changes_nothing_and_masks_secrets(untouched_cluster, tmp_path):
    cluster = untouched_cluster
    inventory = write_inventory(cluster, tmp_path, {"quota_plugin_admin": admin_with_secret(cluster)})
    files = {e["properties"]: open(e["properties"], encoding="utf-8").read() for e in cluster.info["brokers"]}
    before = pids(cluster)
    result = run_site(inventory, "--check", "--diff")
    assert result.returncode == 0, result.stdout[-15000:]
    assert SECRET not in result.stdout + result.stderr
    assert "client.quota.callback.static.kafka.admin.sasl.jaas.config" in result.stdout, (
        "the diff shows the block's keys"
    )
    assert "********" in result.stdout, "and masks the secret"
    assert {p: open(p, encoding="utf-8").read() for p in files} == files, "check mode writes nothing"
    assert pids(cluster) == before, "check mode restarts nothing"


def test_free_form_plugin_keys_are_overridden_with_a_warning(untouched_cluster, tmp_path):
    """The module's last test: it changes the cluster the tests above left untouched."""
    from kafka_testbed import properties
    from kafka_testbed.model import quota_plugin_config

    cluster = untouched_cluster
    free_form = {
        "client.quota.callback.static.produce": "5",
        "client.quota.callback.static.storage.soft": "1000",
        "client.quota.callback.static.request": "7",
    }
    for entry in cluster.broker_nodes:
        with open(entry["properties"], "a", encoding="utf-8") as handle:
            handle.write("".join(f"{key}={value}\n" for key, value in free_form.items()))
    inventory = write_inventory(
        cluster, tmp_path, {"kafka_broker_properties": free_form, "quota_plugin_admin": admin_with_secret(cluster)}
    )
    first = run_site(inventory, "--diff")
    assert first.returncode == 0, first.stdout[-15000:]
    assert SECRET not in first.stdout + first.stderr
    assert "client.quota.callback.static.produce is overridden by kafka_quotas" in first.stdout
    assert "client.quota.callback.static.storage.soft is a legacy quota plugin key" in first.stdout
    for entry in cluster.broker_nodes:
        with open(entry["properties"], encoding="utf-8") as handle:
            text = handle.read()
        assert "# overridden by headroom.kafka kafka_quotas: client.quota.callback.static.produce=5" in text
        assert "# overridden by headroom.kafka kafka_quotas: client.quota.callback.static.storage.soft=1000" in text
        assert "\nclient.quota.callback.static.request=7\n" in text, "keys the spec does not decide stay the user's"
        effective = quota_plugin_config.load(properties.load(entry["properties"]))
        assert (effective.produce, effective.request) == (1048576.0, 7.0)
        assert os.stat(entry["properties"]).st_mode & 0o077 == 0o040, (
            "the file with the admin password is not world-readable"
        )
    second = run_site(inventory)
    assert second.returncode == 0, second.stdout[-15000:]
    assert set(changed_counts(second.stdout).values()) == {0}, second.stdout[-15000:]
