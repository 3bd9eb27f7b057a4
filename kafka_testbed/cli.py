"""Command line of the test cluster: ``python -m kafka_testbed COMMAND --dir DIR ...``."""

import argparse
import json
import signal
import sys

from kafka_testbed.cluster import ENGINE_VARIABLE, ENGINES, Cluster, ClusterError, default_engine
from kafka_testbed.kafka_cluster import METADATA_VARIABLE, write_class_archive
from kafka_testbed.kafka_libs import ensure_libs
from kafka_testbed.kafka_versions import METADATA_MODES
from kafka_testbed.model.state import DEFAULT_CATCH_UP_MS


def _parser():
    parser = argparse.ArgumentParser(
        prog="python -m kafka_testbed", description="A local Apache Kafka test cluster (3.3 to 4.x)."
    )
    commands = parser.add_subparsers(dest="command", required=True)

    def command(name, help_text, broker=False):
        sub = commands.add_parser(name, help=help_text)
        sub.add_argument("--dir", required=True, help="the cluster's directory (holds cluster.json)")
        if broker:
            sub.add_argument("--broker", required=True, type=int, help="node id of the broker (or controller node)")
        return sub

    up = command("up", "create and start a cluster")
    up.add_argument(
        "--engine",
        choices=sorted(ENGINES),
        default=None,
        help=f"kafka: real Apache Kafka from Maven Central; sim: our model (default: ${ENGINE_VARIABLE}, else kafka)",
    )
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument(
        "--combined",
        type=int,
        default=0,
        metavar="K",
        help="the first K brokers are KRaft combined nodes (process.roles=broker,controller), voters of the quorum",
    )
    up.add_argument(
        "--controllers-only",
        type=int,
        default=0,
        metavar="K",
        help="K more nodes with process.roles=controller (ids after the brokers), voters of the quorum",
    )
    up.add_argument("--base-port", type=int, default=19092)
    up.add_argument("--tls", action="store_true", help="SSL listener with a generated CA (PEM)")
    up.add_argument("--client-auth", choices=("required", "requested", "none"), default="required")
    up.add_argument("--scram", action="store_true", help="SASL SCRAM-SHA-256/512 listener, user 'admin' as super user")
    up.add_argument("--volume-size", help="mount each log dir as its own filesystem of this size (e.g. 64M)")
    up.add_argument("--log-dirs-per-broker", type=int, default=1)
    up.add_argument(
        "--catch-up-ms",
        type=int,
        default=DEFAULT_CATCH_UP_MS,
        help="how long a restarted broker's replicas stay out of the ISR",
    )
    up.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="extra server.properties line for every broker"
    )
    up.add_argument(
        "--kafka-version",
        metavar="X.Y.Z",
        help="Apache Kafka release, 3.3.0 or newer (default: $KAFKA_VERSION, else the pom's); fetched once",
    )
    up.add_argument(
        "--metadata",
        choices=METADATA_MODES,
        help=f"kraft, or zookeeper for a 3.x release: brokers and one ZooKeeper node (default: ${METADATA_VARIABLE}, "
        "else kraft)",
    )
    up.add_argument("--timeout", type=float, default=120.0)
    command("down", "stop every broker and unmount the volumes")
    command("status", "show each broker's process and cluster membership")
    for name, text in (
        ("start", "start a stopped broker"),
        ("stop", "stop a broker (controlled shutdown)"),
        ("restart", "stop then start a broker"),
        ("kill", "kill a broker (SIGKILL, no controlled shutdown)"),
        ("pause", "freeze a broker (SIGSTOP)"),
        ("resume", "unfreeze a paused broker (SIGCONT)"),
    ):
        command(name, text, broker=True)
    offline = command("offline-log-dir", "take a log dir away from a running broker", broker=True)
    offline.add_argument("--log-dir", help="default: the broker's first log dir")
    latency = command("latency", "delay every response of a broker", broker=True)
    latency.add_argument("--ms", type=int, required=True)
    user = command("add-scram-user", "add SCRAM credentials (like kafka-storage format --add-scram)")
    user.add_argument("--user", required=True)
    user.add_argument("--password", required=True)
    user.add_argument("--mechanism", default="SCRAM-SHA-512", choices=("SCRAM-SHA-256", "SCRAM-SHA-512"))
    commands.add_parser(
        "libs",
        help="fetch the jars of real Kafka and archive the classes its nodes load "
        "(once; KAFKA_VERSION, KAFKA_HOME) and print where they are",
    )
    witness = commands.add_parser(
        "witness",
        help="produce with acks=all and idempotence until interrupted, then read everything back and report "
        "what was lost, duplicated or refused and the longest stalls",
    )
    where = witness.add_mutually_exclusive_group(required=True)
    where.add_argument("--dir", help="a test cluster's directory (its cluster.json gives the address and credentials)")
    where.add_argument("--bootstrap-servers", help="HOST:PORT[,HOST:PORT...] of a plaintext listener")
    witness.add_argument("--report", required=True, help="where to write the report (JSON)")
    witness.add_argument("--topic", default="headroom-witness")
    witness.add_argument("--rate", type=int, default=400, help="records a second (default 400)")
    _hosts_parser(commands)
    broker = commands.add_parser("broker", help="run one model broker in the foreground from its properties file")
    broker.add_argument("--config", required=True)
    return parser


def _hosts_parser(commands):
    hosts = commands.add_parser(
        "hosts", help="a fleet of test hosts (containers with systemd and sshd) running Kafka under systemd"
    )
    actions = hosts.add_subparsers(dest="hosts_command", required=True)
    up = actions.add_parser("up", help="start a fleet; writes DIR/inventory.yml and DIR/cluster.json")
    down = actions.add_parser("down", help="remove the fleet's hosts (and a Docker daemon started for them)")
    status = actions.add_parser("status", help="each host's address, unit and cluster membership")
    actions.add_parser(
        "stop-daemon", help="stop the Docker daemon 'hosts up' started, once no fleet is left (the test suite's end)"
    )
    actions.add_parser(
        "image",
        help="build the hosts' image for the Kafka release of KAFKA_VERSION (debootstrap, then Kafka on it) when "
        "missing, starting a Docker daemon when none answers; leaves the daemon running for the fleets",
    )
    for sub in (up, down, status):
        sub.add_argument("--dir", required=True, help="the fleet's directory")
    up.add_argument("--brokers", type=int, default=3)
    up.add_argument("--controllers", type=int, default=1, help="controller-only hosts (the KRaft quorum)")
    up.add_argument("--volume-size", default="64M", help="size of each data log dir's own filesystem")
    up.add_argument("--log-dirs-per-broker", type=int, default=1)
    up.add_argument("--tls", action="store_true", help="SSL client listener with a generated CA (PEM)")
    up.add_argument("--scram", action="store_true", help="SASL SCRAM listener, user 'admin' as super user")
    up.add_argument(
        "--inventory-layout",
        choices=("headroom", "cp-ansible"),
        default="headroom",
        help="groups of inventory.yml: kafka, or cp-ansible's kafka_broker and kafka_controller mapped onto kafka",
    )
    up.add_argument(
        "--set", action="append", default=[], metavar="KEY=VALUE", help="extra server.properties line for every node"
    )
    up.add_argument("--timeout", type=float, default=180.0)


def _run_hosts(args):
    from kafka_testbed.hosts.fleet import HostFleet  # pylint: disable=import-outside-toplevel  # needs Docker only here

    if args.hosts_command == "stop-daemon":
        from kafka_testbed.hosts.docker import stop_daemon_if_started  # pylint: disable=import-outside-toplevel
        from kafka_testbed.hosts.image import IMAGE_DIR  # pylint: disable=import-outside-toplevel

        stop_daemon_if_started(IMAGE_DIR, force=True)
        return 0
    if args.hosts_command == "image":
        # make test builds it before pytest, beside sanity and lint, so that no test's timeout holds a debootstrap.
        from kafka_testbed.hosts.image import ready_image  # pylint: disable=import-outside-toplevel

        print(f"test hosts' image: {ready_image(ensure_libs())}")
        return 0
    fleet = HostFleet(args.dir)
    if args.hosts_command == "up":
        fleet.up_fleet(
            args.brokers,
            args.controllers,
            args.volume_size,
            args.log_dirs_per_broker,
            args.tls,
            args.scram,
            _extra(args.set),
            args.timeout,
            inventory_layout=args.inventory_layout,
        )
        print(
            f"fleet {fleet.info['cluster_id']} up: bootstrap_servers={fleet.info['bootstrap_servers']}, "
            f"inventory {fleet.info['inventory']} ({json.dumps(fleet.info['timings'])})"
        )
    elif args.hosts_command == "down":
        fleet.down()
    else:
        if fleet.info is None:
            raise ClusterError(f"--dir {args.dir}: no cluster.json there; run 'hosts up' first")
        print(json.dumps(fleet.status(), indent=2))
    return 0


def _extra(pairs):
    extra = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key:
            raise ClusterError(f"--set {pair!r} is not KEY=VALUE")
        extra[key] = value
    return extra


def _release_options(args):
    """--kafka-version and --metadata for the real engine; the model refuses them rather than ignore them."""
    options = {"kafka_version": args.kafka_version, "metadata": args.metadata}
    given = {key: value for key, value in options.items() if value}
    if given and (args.engine or default_engine()) != "kafka":
        raise ClusterError("--kafka-version and --metadata pick a real Apache Kafka release (--engine kafka)")
    return given


def _run(args):
    if args.command == "broker":
        from kafka_testbed.model.broker import run  # pylint: disable=import-outside-toplevel

        return run(args.config)
    if args.command == "hosts":
        return _run_hosts(args)
    if args.command == "witness":
        return _run_witness(args)
    if args.command == "libs":
        libs = ensure_libs()
        print(
            f"Apache Kafka {libs.version}: {libs.kafka_libs} (plugin: {libs.plugin}, agent: {libs.agent}, "
            f"class archive: {write_class_archive(libs)})"
        )
        return 0
    cluster = Cluster(args.dir, getattr(args, "engine", None))
    if args.command == "up":
        cluster.create(
            args.brokers,
            args.base_port,
            args.tls,
            args.scram,
            args.volume_size,
            args.log_dirs_per_broker,
            args.client_auth,
            args.catch_up_ms,
            _extra(args.set),
            combined=args.combined,
            controllers_only=args.controllers_only,
            **_release_options(args),
        )
        cluster.up(args.timeout)
        print(
            f"{cluster.engine} cluster {cluster.info['cluster_id']} up: "
            f"bootstrap_servers={cluster.info['bootstrap_servers']} "
            f"({cluster.info['security_protocol']}), details in {cluster.path}"
        )
        return 0
    if cluster.info is None:
        raise ClusterError(f"--dir {args.dir}: no cluster.json there; run 'up' first")
    if args.command == "down":
        cluster.down()
    elif args.command == "status":
        print(json.dumps(cluster.status(), indent=2))
    elif args.command == "start":
        cluster.start(args.broker)
    elif args.command == "stop":
        cluster.stop(args.broker)
    elif args.command == "restart":
        cluster.restart(args.broker)
    elif args.command == "kill":
        cluster.kill(args.broker)
    elif args.command == "pause":
        cluster.signal(args.broker, signal.SIGSTOP)
    elif args.command == "resume":
        cluster.signal(args.broker, signal.SIGCONT)
    elif args.command == "offline-log-dir":
        cluster.offline_log_dir(args.broker, args.log_dir)
    elif args.command == "latency":
        if cluster.engine != "sim":
            raise ClusterError(
                "latency injection is a feature of the model (--engine sim); real brokers cannot be slowed that way"
            )
        cluster.broker(args.broker)
        cluster.state.set_fault(args.broker, "latency_ms", args.ms or None)
    elif args.command == "add-scram-user":
        cluster.add_scram_user(args.user, args.password, args.mechanism)
    return 0


def _run_witness(args):
    from kafka_testbed import witness  # pylint: disable=import-outside-toplevel
    from kafka_testbed.client_config import confluent_config  # pylint: disable=import-outside-toplevel

    if args.dir:
        cluster = Cluster(args.dir)
        if cluster.info is None:
            raise ClusterError(f"--dir {args.dir}: no cluster.json there; run 'up' first")
        config = confluent_config(cluster)
    else:
        config = {"bootstrap.servers": args.bootstrap_servers}
    report = witness.run_until_interrupted(config, args.report, topic=args.topic, rate=args.rate)
    print(json.dumps({key: report[key] for key in ("produced", "acknowledged", "missing", "duplicates", "refused")}))
    return 0 if report["missing"] == 0 and report["duplicates"] == 0 else 1


def main(argv=None):
    args = _parser().parse_args(argv)
    try:
        return _run(args)
    except ClusterError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 1
