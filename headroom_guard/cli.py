"""The command line: ``headroom-guard --config FILE [--interval SECONDS] [options]`` (the wheel's entry point), or
``python -m headroom_guard ...``.

Exit status: 0 stopped by SIGTERM or SIGINT (after the decision under way finished), or --once / --check-config done;
1 --once whose decision failed (the cluster could not be asked, or Kafka refused the quotas: nothing was applied),
or an unexpected error; 2 the configuration or an option was refused, before anything talked to Kafka.
"""

from __future__ import annotations

import argparse
import importlib.metadata
import math
import os
import sys
from collections.abc import Sequence

from ansible_collections.headroom.kafka.plugins.module_utils import internal_principals
from ansible_collections.headroom.kafka.plugins.module_utils.disk_guard import GuardError
from headroom_guard import __version__
from headroom_guard.stop_signals import stop_event

EXIT_FAILED = 1
EXIT_BAD_CONFIG = 2
DEFAULT_INTERVAL = 30.0
DEFAULT_RETENTION = "P7D"


def _seconds(text: str, option: str, low: float, allowed: str) -> float:
    try:
        value = float(text)
    except ValueError:
        value = float("nan")
    if not math.isfinite(value) or not low <= value <= 86400.0:
        raise argparse.ArgumentTypeError(f"{option} must be {allowed} (got {text!r})")
    return value


def _interval(text: str) -> float:
    return _seconds(text, "--interval", 1.0, "a number of seconds from 1 to 86400")


def _fastest(text: str) -> float:
    return _seconds(text, "--fastest-interval", 0.1, "a number of seconds from 0.1 to 86400, at most --interval")


def _retention(text: str) -> float:
    from ansible_collections.headroom.kafka.plugins.module_utils import durations  # pylint: disable=import-outside-toplevel

    try:
        return durations.parse_positive_duration(text, "--history-retention").total_seconds()
    except durations.DurationError as exc:
        # argparse names the option already.
        raise argparse.ArgumentTypeError(str(exc).replace("--history-retention ", "", 1)) from None


def _topic(text: str) -> str:
    from ansible_collections.headroom.kafka.plugins.module_utils import option_checks  # pylint: disable=import-outside-toplevel

    problem = option_checks.topic_name_problem(text)
    if problem:
        raise argparse.ArgumentTypeError(f"{problem} (got {text!r})")
    return text


def _state_file(text: str) -> str:
    from ansible_collections.headroom.kafka.plugins.module_utils import guard_memory  # pylint: disable=import-outside-toplevel

    problem = guard_memory.path_problem("--state-file", text)
    if problem:
        raise argparse.ArgumentTypeError(problem.replace("--state-file: ", "", 1))  # argparse names the option already
    return text


def _port(text: str) -> int:
    if not text.isdigit() or not 0 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"--metrics-port must be a TCP port from 0 to 65535 (got {text!r})")
    return int(text)


def installed_version() -> str:
    """The version of the installed wheel (its local label is the digest of what it holds), or the source's."""
    try:
        return importlib.metadata.version("headroom-guard")
    except importlib.metadata.PackageNotFoundError:  # a source checkout
        return __version__


def parser() -> argparse.ArgumentParser:
    # The wheel's entry point, or python -m (whose argv[0] is __main__.py).
    prog = "python -m headroom_guard" if os.path.basename(sys.argv[0]) == "__main__.py" else "headroom-guard"
    command = argparse.ArgumentParser(
        prog=prog,
        description="Observe every log dir of a Kafka cluster, decide a throttle factor and make the cluster's client "
        "quotas hold the declared produce rates scaled by it, every interval.",
        epilog="Exit status: 0 stopped by SIGTERM/SIGINT, or --once/--check-config done; 1 --once whose decision "
        "failed; 2 configuration refused (nothing was sent to Kafka). One line per decision on stderr.",
    )
    command.add_argument(
        "--config",
        required=True,
        metavar="FILE",
        help="YAML or JSON mapping of the headroom.kafka.disk_guard module's options (connection, policy, limits, "
        "quotas, default_producer_byte_rate, excluded_principals, ...)",
    )
    command.add_argument(
        "--interval",
        type=_interval,
        default=DEFAULT_INTERVAL,
        metavar="SECONDS",
        help=f"seconds from the start of one decision to the next (default {DEFAULT_INTERVAL:g})",
    )
    command.add_argument(
        "--fastest-interval",
        type=_fastest,
        metavar="SECONDS",
        help="while a volume closes in on its limit at its current fill rate, decide again after half its time to "
        "the limit, down to this (default 1, or --interval when that is shorter; --interval itself keeps the "
        "interval fixed)",
    )
    command.add_argument(
        "--state-file",
        type=_state_file,
        metavar="PATH",
        help="where the last complete observation is kept across restarts (policy strimzi's validity clock); "
        "in memory only without it",
    )
    command.add_argument(
        "--metrics-file",
        metavar="PATH",
        help="Prometheus text file rewritten atomically after each decision (for node_exporter's textfile "
        "collector: name it *.prom)",
    )
    command.add_argument(
        "--metrics-port", type=_port, metavar="PORT", help="serve the metrics over HTTP at /metrics on this port"
    )
    command.add_argument(
        "--metrics-address",
        default="127.0.0.1",
        metavar="ADDRESS",
        help="address the metrics port binds to (default 127.0.0.1)",
    )
    command.add_argument(
        "--history-dir",
        metavar="DIR",
        help="record every decision (decisions-HOUR.jsonl) and every complete observation as snapshot messages "
        "(snapshots-HOUR.jsonl) here, one file per UTC hour, compressed when the hour is over; "
        "python -m headroom_pipeline run --snapshots DIR reads it as it is",
    )
    command.add_argument(
        "--history-retention",
        type=_retention,
        default=DEFAULT_RETENTION,
        metavar="DURATION",
        help=f"remove history files whose hour ended longer ago than this (default {DEFAULT_RETENTION})",
    )
    command.add_argument(
        "--snapshot-topic",
        type=_topic,
        metavar="TOPIC",
        help="also publish every complete observation to this compacted topic (created when missing), as the "
        "usage_snapshot module does; the publisher is kept out of the throttle: a SASL user joins the excluded "
        f"principals, User:ANONYMOUS is excluded by its client id ({internal_principals.PUBLISHER_CLIENT_ID}), and a "
        "client certificate's principal must be named with --snapshot-publisher-principal",
    )
    command.add_argument(
        "--snapshot-publisher-principal",
        metavar="PRINCIPAL",
        help="the principal the brokers make of the guard's client certificate (User:<name>, by their "
        "ssl.principal.mapping.rules), excluded from the throttle as the snapshot publisher; required with "
        "--snapshot-topic over a client certificate",
    )
    command.add_argument(
        "--observe-only",
        action="store_true",
        help="decide, record and export metrics, never read or change client quotas (a cluster where the quota "
        "plugin enforces, or limits being tried out)",
    )
    command.add_argument("--once", action="store_true", help="decide once and exit")
    command.add_argument(
        "--dry-run", action="store_true", help="decide and have Kafka validate the quotas, never apply them"
    )
    command.add_argument("--check-config", action="store_true", help="check the configuration and exit")
    command.add_argument("--version", action="version", version=f"%(prog)s {installed_version()}")
    return command


def main(argv: Sequence[str] | None = None) -> int:
    command = parser()
    args = command.parse_args(argv)
    if args.fastest_interval is not None and args.fastest_interval > args.interval:
        command.error(
            f"--fastest-interval must be at most --interval {args.interval:g} (got {args.fastest_interval:g}): it is "
            "the shortest wait between decisions"
        )
    from ansible_collections.headroom.kafka.plugins.module_utils import guard_polling
    from headroom_guard import config  # imported here: --help needs no Kafka client
    from headroom_guard.guard import Guard
    from headroom_guard.history import HistoryWriter
    from headroom_guard.metrics import MetricsServer

    try:
        params, settings = config.load(args.config)
    except config.ConfigError as exc:
        print(f"headroom_guard: {exc}", file=sys.stderr)
        return EXIT_BAD_CONFIG
    publisher_note = None
    if args.snapshot_topic:
        try:
            publisher_note = internal_principals.exclude_publisher(
                params,
                settings.declaration,
                args.snapshot_topic,
                args.snapshot_publisher_principal,
                option="--snapshot-publisher-principal",
                sets_quotas=not args.observe_only,
            )
        except GuardError as exc:
            print(f"headroom_guard: {exc}", file=sys.stderr)
            return EXIT_BAD_CONFIG
    elif args.snapshot_publisher_principal is not None:
        command.error("--snapshot-publisher-principal names the publisher of --snapshot-topic, which is not set")
    if args.check_config:
        print(f"headroom_guard: --config {args.config!r} is valid", file=sys.stderr)
        return 0
    if args.dry_run and args.observe_only:
        print("headroom_guard: --dry-run and --observe-only are mutually exclusive", file=sys.stderr)
        return EXIT_BAD_CONFIG
    history = None
    if args.history_dir:
        try:
            history = HistoryWriter(args.history_dir, args.history_retention)
        except OSError as exc:
            print(f"headroom_guard: --history-dir {args.history_dir!r}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_BAD_CONFIG
    guard = Guard(
        params,
        settings,
        state_file=args.state_file,
        metrics_file=args.metrics_file,
        dry_run=args.dry_run,
        observe_only=args.observe_only,
        history=history,
        snapshot_topic=args.snapshot_topic,
    )
    if publisher_note:
        guard.say(publisher_note)
    if args.once:
        try:
            return 0 if guard.decide() is not None else EXIT_FAILED
        finally:
            guard.close()
    stop = stop_event()
    server: MetricsServer | None = None
    if args.metrics_port is not None:
        try:
            server = MetricsServer(guard.metrics, args.metrics_address, args.metrics_port, guard.lock).start()
        except OSError as exc:
            print(
                f"headroom_guard: --metrics-port {args.metrics_port}: cannot listen on {args.metrics_address}: "
                f"{exc.strerror or exc}",
                file=sys.stderr,
            )
            return EXIT_BAD_CONFIG
        guard.say(f"metrics on http://{args.metrics_address}:{server.port}/metrics")
    fastest = guard_polling.fastest_interval(args.interval, args.fastest_interval)
    sooner = f", down to {fastest:g} s while a volume closes in on its limit" if fastest < args.interval else ""
    guard.say(
        f"deciding every {args.interval:g} s{sooner} ({settings.policy.name}); SIGTERM stops after the decision under "
        "way"
    )
    try:
        guard.run(args.interval, stop, fastest)
    finally:
        if server is not None:
            server.stop()
    guard.say("stopped")
    return 0
