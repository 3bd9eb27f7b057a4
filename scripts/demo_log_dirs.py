"""Print every broker and log dir of a test cluster with total, usable and used bytes.

Reads the sizes the way an operator's tooling would: DescribeLogDirs (KIP-827) through kafka-python.
"""

import json
import sys

from kafka.admin import KafkaAdminClient


def _human(value):
    if value is None or value < 0:
        return "unknown"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB"):
        if value < 1024 or unit == "TiB":
            return f"{value:.1f} {unit}" if unit != "B" else f"{value} B"
        value /= 1024.0
    return str(value)


def main(cluster_file):
    with open(cluster_file, encoding="utf-8") as handle:
        info = json.load(handle)
    admin = KafkaAdminClient(bootstrap_servers=info["bootstrap_servers"], client_id="headroom-demo")
    try:
        cluster = admin.describe_cluster()
        print(
            f"cluster {cluster['cluster_id']}: {len(cluster['brokers'])} brokers, bootstrap {info['bootstrap_servers']}"
        )
        print(f"{'broker':>6}  {'host:port':<21} {'log dir':<58} {'total':>11} {'usable':>11} {'used':>11}")
        for broker in sorted(cluster["brokers"], key=lambda b: b["broker_id"]):
            for log_dir in admin.describe_log_dirs(brokers=[broker["broker_id"]])[0]["log_dirs"]:
                total, usable = log_dir.get("total_bytes", -1), log_dir.get("usable_bytes", -1)
                used = (
                    total - usable if total is not None and usable is not None and total >= 0 and usable >= 0 else None
                )
                print(
                    f"{broker['broker_id']:>6}  {broker['host'] + ':' + str(broker['port']):<21} "
                    f"{log_dir['log_dir']:<58} {_human(total):>11} {_human(usable):>11} {_human(used):>11}"
                )
    finally:
        admin.close()


if __name__ == "__main__":
    main(sys.argv[1])
