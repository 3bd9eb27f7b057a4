"""Verify the hosts scenario over SSH, on each host as molecule's inventory reaches it: the units, the jars the roles
installed with their pinned checksums, the files and their modes."""

PLUGIN_JAR = "/opt/kafka/libs/kafka-quotas-plugin-0.3.1.jar"
PLUGIN_SHA256 = "6f1fd30adbe26adb0e7411b653077ea920e13f6ac0adb769b6348ee47876175d"
AGENT_SHA256 = "7d61f737fd661610ccc14aea79764faa1ea94a340cbc8f0029b3d2edea3d80c1"
CALLBACK = "client.quota.callback.class=io.strimzi.kafka.quotas.StaticQuotaCallback"


def is_broker(host):
    return "broker" in host.ansible.get_variables()["kafka_process_roles"]


def test_kafka_runs_under_systemd_and_is_enabled(host):
    service = host.service("kafka")
    assert service.is_running
    assert service.is_enabled


def test_the_quota_plugin_jar_and_block_are_on_brokers_only(host):
    jar = host.file(PLUGIN_JAR)
    if not is_broker(host):
        assert not jar.exists
        return
    assert jar.exists and jar.sha256sum == PLUGIN_SHA256
    with host.sudo():
        properties = host.file("/etc/kafka/server.properties")
        assert CALLBACK in properties.content_string
        assert properties.user == "kafka" and properties.mode == 0o640


def test_the_jmx_exporter_agent_is_loaded_through_a_drop_in(host):
    drop_in = host.file("/etc/systemd/system/kafka.service.d/headroom-jmx-exporter.conf")
    assert drop_in.exists and drop_in.user == "root"
    assert "-javaagent:" in drop_in.content_string
    agent = drop_in.content_string.split("-javaagent:", 1)[1].split("=", 1)[0]
    assert host.file(agent).sha256sum == AGENT_SHA256
    pid = host.check_output("systemctl show -p MainPID --value kafka")
    with host.sudo():
        assert "-javaagent:" + agent in host.file(f"/proc/{pid}/cmdline").content_string.replace("\0", " ")
    assert host.socket("tcp://0.0.0.0:7071").is_listening
