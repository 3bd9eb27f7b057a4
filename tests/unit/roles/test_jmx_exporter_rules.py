"""The jmx_exporter role's rules (roles/jmx_exporter/files/jmx-exporter.yml) against MBean names a real Kafka 4.3.1
broker with the Strimzi quota plugin 0.3.1 registers (read from the exporter with a rule that exports every name as it
is matched).

Each sample is matched twice: here, the way the exporter matches (a rule's pattern wrapped in ``^.*(?:PATTERN).*$``
against ``DOMAIN<KEY=VALUE, ...><>ATTRIBUTE: VALUE``, the first match wins, names sanitized and lowercased, empty
labels left out), and by the real agent's own collector in a JVM, which registers the same MBeans and prints what the
exporter would serve (when a JDK and the agent's jar are there: ``make kafka-libs`` fetches the jar)."""

import glob
import os
import re
import shutil
import subprocess

import pytest
import yaml
from generic_exporter_rules import GENERIC_OBJECT_NAMES, GENERIC_RULES, GENERIC_SERIES

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
RULES = os.path.join(ROOT, "roles", "jmx_exporter", "files", "jmx-exporter.yml")
# What the agent 1.0.x reads from its file; anything else is a typo it would ignore.
CONFIG_KEYS = {
    "startDelaySeconds",
    "lowercaseOutputName",
    "lowercaseOutputLabelNames",
    "includeObjectNames",
    "excludeObjectNames",
    "autoExcludeObjectNameAttributes",
    "excludeObjectNameAttributes",
    "includeObjectNameAttributes",
    "rules",
}
RULE_KEYS = {"pattern", "name", "value", "valueFactor", "labels", "help", "cache", "type", "attrNameSnakeCase"}
TYPES = {"GAUGE", "COUNTER", "UNTYPED"}
DATA_DIR = "/var/lib/kafka/data-0"

# (MBean as the broker registers it, attribute, value, the metric the exporter serves: name and labels). None: not
# exported.
SAMPLES = [
    (
        "io.strimzi.kafka.quotas:type=StaticQuotaCallback,name=Produce",
        "Value",
        1048576.0,
        ("strimzi_quotas_produce_byte_rate", {}),
    ),
    (
        "io.strimzi.kafka.quotas:type=StaticQuotaCallback,name=Fetch",
        "Value",
        2097152.0,
        ("strimzi_quotas_fetch_byte_rate", {}),
    ),
    (
        "io.strimzi.kafka.quotas:type=StaticQuotaCallback,name=Request",
        "Value",
        1.7976931348623157e308,
        ("strimzi_quotas_request_percentage", {}),
    ),
    (
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=ThrottleFactor,observingBrokerId=1",
        "Value",
        0.5,
        ("strimzi_quotas_throttle_factor", {"observing_broker_id": "1"}),
    ),
    (
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=FallbackThrottleFactorApplied",
        "Count",
        2.0,
        ("strimzi_quotas_fallback_throttle_factor_applied_total", {}),
    ),
    (
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=LimitViolated",
        "Count",
        7.0,
        ("strimzi_quotas_limit_violated_total", {}),
    ),
    # The plugin's README shows the two counters with the observing broker's id: the same names, with its label.
    (
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=FallbackThrottleFactorApplied,observingBrokerId=1",
        "Count",
        3.0,
        ("strimzi_quotas_fallback_throttle_factor_applied_total", {"observing_broker_id": "1"}),
    ),
    (
        "io.strimzi.kafka.quotas:type=ThrottleFactor,name=LimitViolated,observingBrokerId=1",
        "Count",
        5.0,
        ("strimzi_quotas_limit_violated_total", {"observing_broker_id": "1"}),
    ),
    (
        "io.strimzi.kafka.quotas:type=VolumeSource,name=ActiveBrokers,observingBrokerId=1",
        "Value",
        3.0,
        ("strimzi_quotas_active_brokers", {"observing_broker_id": "1"}),
    ),
    (
        "io.strimzi.kafka.quotas:type=VolumeSource,name=ActiveLogDirs,observingBrokerId=1",
        "Value",
        6.0,
        ("strimzi_quotas_active_log_dirs", {"observing_broker_id": "1"}),
    ),
    (
        f"io.strimzi.kafka.quotas:type=VolumeSource,name=AvailableBytes,observingBrokerId=1,remoteBrokerId=12,"
        f"logDir={DATA_DIR}",
        "Value",
        81873702912.0,
        ("strimzi_quotas_available_bytes", {"observing_broker_id": "1", "remote_broker_id": "12", "log_dir": DATA_DIR}),
    ),
    (
        f"io.strimzi.kafka.quotas:type=VolumeSource,name=ConsumedBytes,observingBrokerId=1,remoteBrokerId=12,"
        f"logDir={DATA_DIR}",
        "Value",
        188679471104.0,
        ("strimzi_quotas_consumed_bytes", {"observing_broker_id": "1", "remote_broker_id": "12", "log_dir": DATA_DIR}),
    ),
    (
        "io.strimzi.kafka.quotas:type=CachingVolumeObserver,name=CachedEntries,observingBrokerId=1",
        "Value",
        4.0,
        ("strimzi_quotas_cached_volumes", {"observing_broker_id": "1"}),
    ),
    (
        f"io.strimzi.kafka.quotas:type=CachingVolumeObserver,name=LogDirEvictions,observingBrokerId=1,remoteBrokerId=2,"
        f"logDir={DATA_DIR}",
        "Count",
        0.0,
        (
            "strimzi_quotas_log_dir_evictions_total",
            {"observing_broker_id": "1", "remote_broker_id": "2", "log_dir": DATA_DIR},
        ),
    ),
    # Kafka's own quotas: one sensor per entity, with the parts the entity names.
    (
        "kafka.server:type=Produce,user=alice,client-id=loader",
        "byte-rate",
        299280.79,
        ("kafka_server_produce_byte_rate", {"user": "alice", "client_id": "loader"}),
    ),
    (
        "kafka.server:type=Produce,user=alice,client-id=loader",
        "throttle-time",
        12.5,
        ("kafka_server_produce_throttle_time", {"user": "alice", "client_id": "loader"}),
    ),
    (
        "kafka.server:type=Produce,user=ANONYMOUS",
        "throttle-time",
        0.0,
        ("kafka_server_produce_throttle_time", {"user": "ANONYMOUS"}),
    ),
    (
        "kafka.server:type=Fetch,client-id=reports",
        "byte-rate",
        68.8,
        ("kafka_server_fetch_byte_rate", {"client_id": "reports"}),
    ),
    (
        "kafka.server:type=Request,user=alice,client-id=loader",
        "request-time",
        0.4,
        ("kafka_server_request_request_time", {"user": "alice", "client_id": "loader"}),
    ),
    # Under the plugin: one sensor per quota type, for every client.
    ("kafka.server:type=Produce,quota.type=PRODUCE", "byte-rate", 295256.55, ("kafka_server_produce_byte_rate", {})),
    ("kafka.server:type=Fetch,quota.type=FETCH", "throttle-time", 3.0, ("kafka_server_fetch_throttle_time", {})),
    ("kafka.server:type=Produce", "queue-size", 0.0, None),
    (
        "kafka.server:type=ReplicaManager,name=UnderReplicatedPartitions",
        "Value",
        0.0,
        ("kafka_server_replicamanager_underreplicatedpartitions", {}),
    ),
    (
        "kafka.server:type=ReplicaManager,name=OfflineReplicaCount",
        "Value",
        0.0,
        ("kafka_server_replicamanager_offlinereplicacount", {}),
    ),
    (
        "kafka.server:type=ReplicaManager,name=IsrShrinksPerSec",
        "Count",
        4.0,
        ("kafka_server_replicamanager_isrshrinks_total", {}),
    ),
    ("kafka.server:type=ReplicaManager,name=IsrShrinksPerSec", "OneMinuteRate", 0.1, None),
    ("kafka.server:type=KafkaServer,name=BrokerState", "Value", 3.0, ("kafka_server_kafkaserver_brokerstate", {})),
    (
        "kafka.controller:type=KafkaController,name=ActiveControllerCount",
        "Value",
        1.0,
        ("kafka_controller_kafkacontroller_activecontrollercount", {}),
    ),
    (
        "kafka.log:type=LogManager,name=OfflineLogDirectoryCount",
        "Value",
        0.0,
        ("kafka_log_logmanager_offlinelogdirectorycount", {}),
    ),
    (
        f'kafka.log:type=LogManager,name=LogDirectoryOffline,logDirectory="{DATA_DIR}"',
        "Value",
        1.0,
        ("kafka_log_logmanager_logdirectoryoffline", {"log_dir": DATA_DIR}),
    ),
    (
        "kafka.log:type=Log,name=Size,topic=events.v1,partition=11",
        "Value",
        885767.0,
        ("kafka_log_log_size", {"topic": "events.v1", "partition": "11"}),
    ),
    # A log being moved between log dirs has a second, future log: not counted twice.
    ("kafka.log:type=Log,name=Size,topic=events.v1,partition=11,is-future=true", "Value", 12.0, None),
]


# What the generic rules add: MBeans no rule of the role matches.
GENERIC_SAMPLES = [
    (
        "kafka.server:type=BrokerTopicMetrics,name=MessagesInPerSec",
        "Count",
        42.0,
        (GENERIC_SERIES, {}),
    ),
    (
        "kafka.network:type=RequestChannel,name=RequestQueueSize",
        "Value",
        1.0,
        ("kafka_network_requestchannel_requestqueuesize", {}),
    ),
]


def load_config():
    with open(RULES, encoding="utf-8") as handle:
        return yaml.safe_load(handle)


def with_extra_rules(config, extra, object_names=()):
    """The configuration the role writes with jmx_exporter_extra_rules (its rules first) and
    jmx_exporter_extra_object_names, as roles/jmx_exporter/vars combines them."""
    return dict(
        config,
        includeObjectNames=config["includeObjectNames"] + list(object_names),
        rules=config["rules"] + extra,
    )


def test_the_configuration_has_only_keys_the_agent_reads():
    config = load_config()
    assert set(config) <= CONFIG_KEYS
    assert config["lowercaseOutputName"] is True and config["lowercaseOutputLabelNames"] is True
    assert all(isinstance(name, str) and ":" in name for name in config["includeObjectNames"])
    for index, rule in enumerate(config["rules"]):
        assert set(rule) <= RULE_KEYS, f"rules[{index}]: {sorted(set(rule) - RULE_KEYS)}"
        assert isinstance(rule["pattern"], str) and isinstance(rule["name"], str), f"rules[{index}]"
        if not rule["name"]:
            assert set(rule) == {"pattern", "name"}, f"rules[{index}]: a rule that drops what it matches, nothing else"
        assert rule.get("type", "UNTYPED") in TYPES, f"rules[{index}]"
        assert all(isinstance(value, str) for value in rule.get("labels", {}).values()), f"rules[{index}]"
        if rule.get("type") == "COUNTER":
            assert rule["name"].endswith("_total"), f"rules[{index}]: a counter named as the exporter serves it"


# Python-only regular expression syntax, and a '{' that is no repetition (Java refuses it, Python reads it as text).
NOT_JAVA = re.compile(r"\(\?P[<=>]|\(\?#|(?<!\\)\{(?!\d+(?:,\d*)?\})")


@pytest.mark.parametrize("index", range(len(load_config()["rules"])))
def test_every_pattern_compiles_and_is_java_syntax(index):
    pattern = load_config()["rules"][index]["pattern"]
    re.compile(pattern)
    assert not NOT_JAVA.search(pattern), pattern
    assert "\n" not in pattern, "a folded pattern must join its lines with a space only"


def match_string(object_name, attribute, value):
    """The text the exporter matches a pattern against: DOMAIN<KEY=VALUE, ...><>ATTRIBUTE: VALUE."""
    domain, _colon, keys = object_name.partition(":")
    return "{0}<{1}><>{2}: {3}".format(domain, ", ".join(keys.split(",")), attribute, value)


def safe_name(name):
    """The exporter's safeName: characters other than letters, digits, ':' and '_' become '_', runs of '_' become one,
    and a leading digit gets a '_' before it."""
    name = re.sub(r"[^a-zA-Z0-9:_]", "_", name)
    name = re.sub(r"_+", "_", name)
    return "_" + name if name[:1].isdigit() else name


def exported(config, object_name, attribute, value):
    """(name, labels) the exporter serves for one attribute, or None."""
    text = match_string(object_name, attribute, value)
    for rule in config["rules"]:
        match = re.match("^.*(?:" + rule["pattern"] + ").*$", text)
        if not match:
            continue

        def substitute(template, found=match):
            return re.sub(r"\$(\d+)", lambda group: found.group(int(group.group(1))) or "", template)

        name = safe_name(substitute(rule["name"]))
        if not name:  # the attribute is dropped: no later rule is tried
            return None
        if config.get("lowercaseOutputName"):
            name = name.lower()
        if rule.get("type") == "COUNTER" and not name.endswith("_total"):
            name += "_total"
        labels = {}
        for label, template in rule.get("labels", {}).items():
            label = safe_name(substitute(label))
            if config.get("lowercaseOutputLabelNames"):
                label = label.lower()
            text_value = substitute(template)
            if text_value:
                labels[label] = text_value
        return name, labels
    return None


@pytest.mark.parametrize(("object_name", "attribute", "value", "expected"), SAMPLES)
def test_each_sample_gets_its_stable_name(object_name, attribute, value, expected):
    assert exported(load_config(), object_name, attribute, value) == expected


@pytest.mark.parametrize(("object_name", "attribute", "value", "expected"), SAMPLES + GENERIC_SAMPLES)
def test_generic_extra_rules_keep_every_stable_name_and_add_the_rest(object_name, attribute, value, expected):
    config = with_extra_rules(load_config(), GENERIC_RULES)
    assert exported(config, object_name, attribute, value) == expected
    if object_name.startswith("kafka.log:type=LogManager,name=LogDirectoryOffline"):
        before = dict(config, rules=GENERIC_RULES + load_config()["rules"])
        assert set(exported(before, object_name, attribute, value)[1]) == {"logdirectory"}, (
            "what the generic rules made of it when they came first"
        )


PROBE = r"""
import io.prometheus.jmx.JmxCollector;
import io.prometheus.metrics.expositionformats.PrometheusTextFormatWriter;
import io.prometheus.metrics.model.registry.PrometheusRegistry;
import java.io.File;
import java.lang.management.ManagementFactory;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.management.*;

// Registers the samples (OBJECT NAME, TAB, ATTRIBUTE, TAB, VALUE per line) as MBeans and prints what the exporter's
// collector serves for them with the configuration given.
public class RulesProbe {
    public static class Sample implements DynamicMBean {
        private final Map<String, Object> values;

        Sample(Map<String, Object> values) {
            this.values = values;
        }

        public Object getAttribute(String name) throws AttributeNotFoundException {
            if (!values.containsKey(name)) throw new AttributeNotFoundException(name);
            return values.get(name);
        }

        public void setAttribute(Attribute attribute) {
            throw new UnsupportedOperationException();
        }

        public AttributeList getAttributes(String[] names) {
            AttributeList list = new AttributeList();
            for (String name : names) if (values.containsKey(name)) list.add(new Attribute(name, values.get(name)));
            return list;
        }

        public AttributeList setAttributes(AttributeList attributes) {
            return new AttributeList();
        }

        public Object invoke(String action, Object[] params, String[] signature) {
            return null;
        }

        public MBeanInfo getMBeanInfo() {
            MBeanAttributeInfo[] attributes = values.keySet().stream()
                .map(name -> new MBeanAttributeInfo(name, "java.lang.Double", name, true, false, false))
                .toArray(MBeanAttributeInfo[]::new);
            return new MBeanInfo(Sample.class.getName(), "sample", attributes, null, null, null);
        }
    }

    public static void main(String[] args) throws Exception {
        MBeanServer server = ManagementFactory.getPlatformMBeanServer();
        Map<String, Map<String, Object>> beans = new LinkedHashMap<>();
        for (String line : Files.readAllLines(Path.of(args[1]))) {
            if (line.isBlank()) continue;
            String[] parts = line.split("\t");
            beans.computeIfAbsent(parts[0], key -> new LinkedHashMap<>()).put(parts[1], Double.valueOf(parts[2]));
        }
        for (Map.Entry<String, Map<String, Object>> bean : beans.entrySet()) {
            server.registerMBean(new Sample(bean.getValue()), new ObjectName(bean.getKey()));
        }
        PrometheusRegistry registry = new PrometheusRegistry();
        new JmxCollector(new File(args[0]), JmxCollector.Mode.AGENT).register(registry);
        new PrometheusTextFormatWriter(false).write(System.out, registry.scrape());
    }
}
"""


def agent_jar():
    found = sorted(glob.glob(os.path.join(ROOT, "build", "*", "*", "jmx_prometheus_javaagent-*.jar")))
    found += sorted(glob.glob(os.path.join(ROOT, "build", "*", "jmx_prometheus_javaagent-*.jar")))
    return found[-1] if found else None


def parse_exposition(text):
    """{(name, frozenset of labels): value} from Prometheus' text format."""
    series = {}
    for line in text.splitlines():
        if not line or line.startswith("#"):
            continue
        head, _space, value = line.rpartition(" ")
        name, _brace, labels = head.partition("{")
        pairs = re.findall(r'([a-zA-Z_][a-zA-Z0-9_]*)="((?:[^"\\]|\\.)*)"', labels)
        series[(name, frozenset(pairs))] = float(value)
    return series


@pytest.mark.parametrize("extra", [[], GENERIC_RULES], ids=["the-roles-rules", "with-generic-extra-rules"])
def test_the_real_agent_serves_the_same_names(tmp_path, extra):
    java = shutil.which("java")
    jar = agent_jar()
    if not java or not jar:
        pytest.skip("needs java and the agent's jar in build/ (make kafka-libs)")
    wanted = SAMPLES + (GENERIC_SAMPLES if extra else [])
    samples = tmp_path / "samples.tsv"
    samples.write_text("".join(f"{name}\t{attribute}\t{value!r}\n" for name, attribute, value, _expected in wanted))
    rules = tmp_path / "jmx-exporter.yml"
    # the samples include request metrics, which the site test leaves out for its scrape time
    config = with_extra_rules(load_config(), extra, [*GENERIC_OBJECT_NAMES, "kafka.network:*"] if extra else ())
    rules.write_text(yaml.safe_dump(config), encoding="utf-8")
    source = tmp_path / "RulesProbe.java"
    source.write_text(PROBE)
    result = subprocess.run(
        [java, "-cp", jar, str(source), str(rules), str(samples)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    if result.returncode != 0 and "java.lang.module.FindException" in result.stderr:
        pytest.skip("this Java cannot run a source file (no jdk.compiler module)")
    assert result.returncode == 0, result.stderr[-3000:]
    served = parse_exposition(result.stdout)
    expected = {
        (name, frozenset(labels.items())): value
        for _bean, _attribute, value, found in wanted
        if found
        for name, labels in [found]
    }
    ours = {key: value for key, value in served.items() if key[0].startswith(("strimzi_quotas_", "kafka_"))}
    assert ours == expected
