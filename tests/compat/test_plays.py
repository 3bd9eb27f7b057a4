"""site.yml and the rolling restart on each Kafka release: the plays converge, a second run changes nothing, and the
active controller (a KRaft quorum's leader, or the broker ZooKeeper elected) restarts last."""

from ansible_plays import (
    SPEC,
    changed_counts,
    pids,
    roll_every_node_and_find_the_last,
    run_site,
    scrape,
    write_inventory,
)

from kafka_testbed.traffic import wait_until


def _plugin_loaded(url):
    """The plugin's gauges once its first storage check ran (it registers them then), else None."""
    series = scrape(url)
    return series if any(name.startswith("io_strimzi_kafka_quotas") for name in series) else None


def test_site_converges_and_a_second_run_changes_nothing(kafka_release, release_cluster, tmp_path):
    cluster = release_cluster(3)
    inventory = write_inventory(cluster, tmp_path, {"kafka_quotas": dict(SPEC, check_interval=2)})
    before = pids(cluster)
    first = run_site(inventory)
    assert first.returncode == 0, first.stdout[-15000:]
    # The quota_plugin role warns where the release's brokers throw at the plugin while a broker is fenced.
    warned = f"Kafka {kafka_release.version} has KAFKA-20746" in first.stdout
    assert warned is kafka_release.release.fenced_broker_callback_fault, first.stdout[-15000:]
    restarted = pids(cluster)
    assert all(restarted[entry["id"]] != before[entry["id"]] for entry in cluster.broker_nodes), (
        f"every broker restarts to load the plugin on Kafka {kafka_release.id}"
    )
    for entry in cluster.broker_nodes:
        wait_until(
            lambda url=entry["metrics_url"]: _plugin_loaded(url),
            30,
            what=f"broker {entry['id']} serving the quota plugin's metrics",
        )
    second = run_site(inventory)
    assert second.returncode == 0, second.stdout[-15000:]
    assert set(changed_counts(second.stdout).values()) == {0}, second.stdout[-15000:]
    assert pids(cluster) == restarted, "a converged cluster is not restarted again"


def test_the_active_controller_restarts_last(kafka_release, release_cluster, tmp_path):
    # KRaft: three combined nodes, each a voter; ZooKeeper mode: three brokers, one of them elected controller.
    cluster = release_cluster(3, **({"combined": 3} if kafka_release.mode == "kraft" else {}))
    leader, order, before, after = roll_every_node_and_find_the_last(cluster, tmp_path)
    assert all(after[node][0] != before[node][0] for node in before), "every node restarted"
    assert order[-1] == leader, f"restart order {order}, active controller was {leader}"
