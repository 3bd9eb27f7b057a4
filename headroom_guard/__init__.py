"""headroom_guard: the disk guard as a long-running process, ``headroom-guard --config FILE`` (or ``python -m
headroom_guard``).

Every interval it observes every log dir of a Kafka cluster, decides a throttle factor (the Strimzi plugin's binary
rule or the graded soft and hard limits) and makes the cluster's client quotas hold the declared produce rates scaled
by it: the same rules, through the same code, as the ``headroom.kafka.disk_guard`` module. Run
``headroom-guard --help``.

Installed on its host, it is the wheel ``headroom-guard`` (packaging/headroom-guard; ``python -m headroom_guard.wheel``
builds it), which holds the collection's module_utils it imports under their own name; its host needs Python 3.8 and
kafka-python. On a control node it is also part of the package headroom-kafka (pyproject.toml).
"""

__version__ = "1.0.0"
