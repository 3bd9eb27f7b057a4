"""headroom_guard: the disk guard as a long-running process, ``python -m headroom_guard --config FILE``.

Every interval it observes every log dir of a Kafka cluster, decides a throttle factor (the Strimzi plugin's binary
rule or the graded soft and hard limits) and makes the cluster's client quotas hold the declared produce rates scaled
by it: the same rules, through the same code, as the ``headroom.kafka.disk_guard`` module. Run
``python -m headroom_guard --help``.
"""

__version__ = "0.1.0"
