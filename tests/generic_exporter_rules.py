"""Generic JMX exporter rules of the kind a user's own rule file adds (Strimzi's kafka-metrics.yaml is built of such):
any per-second counter and any kafka.* gauge with up to two keys, named after the MBean's domain, type and name, with
its keys as labels. Given as jmx_exporter_extra_rules, they must leave the role's series as they are (put before the
role's, the gauge rule with one key took the LogManager MBeans and served logDirectory where the alerts read log_dir)
and add the MBeans the role's rules leave out."""

GENERIC_RULES = [
    {
        "pattern": "kafka.(\\w+)<type=(.+), name=(.+)PerSec\\w*><>Count",
        "name": "kafka_$1_$2_$3_total",
        "type": "COUNTER",
    },
    {
        "pattern": "kafka.(\\w+)<type=(.+), name=(.+), (.+)=(.+), (.+)=(.+)><>Value",
        "name": "kafka_$1_$2_$3",
        "type": "GAUGE",
        "labels": {"$4": "$5", "$6": "$7"},
    },
    {
        "pattern": "kafka.(\\w+)<type=(.+), name=(.+), (.+)=(.+)><>Value",
        "name": "kafka_$1_$2_$3",
        "type": "GAUGE",
        "labels": {"$4": "$5"},
    },
    {"pattern": "kafka.(\\w+)<type=(.+), name=(.+)><>Value", "name": "kafka_$1_$2_$3", "type": "GAUGE"},
]
# The MBeans they are given for (jmx_exporter_extra_object_names): the brokers' topic meters, a few dozen (all of
# kafka.network, thousands of request metrics, would make each scrape of a real broker slow); and a series they serve.
GENERIC_OBJECT_NAMES = ["kafka.server:type=BrokerTopicMetrics,*"]
GENERIC_SERIES = "kafka_server_brokertopicmetrics_messagesin_total"
