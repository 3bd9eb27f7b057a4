"""The command line: ``python -m headroom_pipeline run --snapshots PATH --out DIR [options]``.

stdout carries exactly one JSON line after a run that finished, and nothing otherwise: while the job runs, file
descriptor 1 is pointed at stderr, so that Spark's JVM (which inherits it), its Python workers and any library that
prints go to stderr, and the result line is written to the real stdout once the job is done. Every line printed
goes through sources.mask_secrets.
"""

import argparse
import contextlib
import json
import os
import sys
import traceback
from collections.abc import Iterator, Sequence

from headroom_pipeline.config import (
    DEFAULT_MAX_TIMELINE_ROWS,
    DEFAULT_STEP,
    ConfigError,
    PipelineConfig,
    instant,
    seconds,
)
from headroom_pipeline.sources import SourceUnavailable, mask_secrets

EXIT_BAD_INPUT = 2
EXIT_FAILED = 1


def _argument_type(convert, option):
    """An argparse type from a config converter: its ConfigError becomes argparse's message for the option."""

    def parse(text):
        try:
            return convert(text, option)
        except ConfigError as exc:
            raise argparse.ArgumentTypeError(str(exc)) from None

    return parse


def _duration(option):
    return _argument_type(seconds, option)


def _instant(option):
    return _argument_type(instant, option)


def _setting(text):
    key, sep, value = text.partition("=")
    if not sep or not key:
        raise argparse.ArgumentTypeError(f"--conf takes KEY=VALUE, such as spark.executor.memory=4g (got {text!r})")
    return key, value


class _HelpFormatter(argparse.ArgumentDefaultsHelpFormatter):
    """Defaults shown for every option that takes a value; flags (--quiet, --no-report) have none worth showing."""

    def _get_help_string(self, action):
        if action.nargs == 0:
            return action.help
        text = action.help or ""
        if action.default in (None, []) or action.required or "%(default)" in text:
            return text
        return f"{text} (default: %(default)s)".lstrip()


class _Parser(argparse.ArgumentParser):
    """argparse's errors quote what they could not parse: a kafka:// URL given in the wrong place has its secrets
    masked."""

    def error(self, message):
        super().error(mask_secrets(message))


def parser() -> argparse.ArgumentParser:
    # The name it was started by: the console script, or the module (python -m, and spark-submit's __main__.py).
    top = _Parser(
        prog="python -m headroom_pipeline" if os.path.basename(sys.argv[0]) == "__main__.py" else "headroom-pipeline",
        description="Fleet-scale history of Kafka volume usage and client quotas on Spark.",
    )
    commands = top.add_subparsers(dest="command", required=True)
    run = commands.add_parser(
        "run",
        help="read snapshots (and traffic, quotas), write decisions, forecast, analyses and a report",
        formatter_class=_HelpFormatter,
    )
    inputs = run.add_argument_group("inputs (PATH: a file, a directory or a glob of JSON lines or Parquet files)")
    inputs.add_argument(
        "--snapshots",
        required=True,
        metavar="PATH",
        help="usage snapshots as usage_snapshot writes them, a disk guard's --history-dir (its snapshots-* files), or "
        "kafka://host:port[,host:port]/topic[?security_protocol=SSL&ssl_cafile=...] "
        "(SASL/SSL key passwords from HEADROOM_KAFKA_SASL_PASSWORD / HEADROOM_KAFKA_SSL_PASSWORD)",
    )
    inputs.add_argument(
        "--traffic",
        metavar="PATH",
        help="client traffic rows: ts, broker_id, user, client_id, topic, bytes_in, bytes_out",
    )
    inputs.add_argument("--quotas", metavar="FILE", help="client quotas: client_quota_info's JSON result")
    inputs.add_argument(
        "--proposed-quotas", metavar="FILE", help="a proposed quota set in the same form, for the what-if analysis"
    )
    inputs.add_argument(
        "--topic-thresholds",
        metavar="FILE",
        help="topic threshold plan: {total_bytes_in_per_sec_threshold, topics: {name: threshold}}",
    )
    inputs.add_argument(
        "--guard-decisions",
        metavar="PATH",
        help="the disk guard's decision records (decisions-*.jsonl[.gz] of its --history-dir), compared with the "
        "replay; default: those of a --snapshots guard history directory, when it holds some",
    )
    inputs.add_argument(
        "--cluster", default="default", help="cluster name for snapshots and guard decisions without ClusterId"
    )
    times = run.add_argument_group(
        "plausible time stamps (a SnapshotAt or ts outside them is rejected with the reason)",
        "Stamps must be from 1970-01-01T00:00:00Z to 9999-12-31T23:59:59Z. "
        "Without --since/--until, a stamp more than --plausible-window before or after the median stamp of its input "
        "is implausible: a broker whose clock was reset to 1970 or ran ahead cannot move the median, and its records "
        "would otherwise stretch the decision timeline over decades.",
    )
    times.add_argument(
        "--since",
        type=_instant("--since"),
        metavar="INSTANT",
        help="earliest stamp accepted, ISO 8601 with a zone such as 2026-11-01T00:00:00Z "
        "(replaces the lower bound from the median)",
    )
    times.add_argument(
        "--until",
        type=_instant("--until"),
        metavar="INSTANT",
        help="latest stamp accepted (replaces the upper bound from the median)",
    )
    times.add_argument(
        "--plausible-window",
        type=_duration("--plausible-window"),
        default="P366D",
        metavar="DURATION",
        help="how far from the median stamp of its input a stamp may be",
    )
    times.add_argument(
        "--max-timeline-rows",
        type=int,
        default=DEFAULT_MAX_TIMELINE_ROWS,
        metavar="N",
        help="the largest decision timeline of one cluster, in check instants x volumes, to compute; "
        "a larger one fails before it is built",
    )
    run.add_argument(
        "--out",
        required=True,
        metavar="DIR",
        help="output directory; each run publishes all its outputs at once, as symlinks into DIR/current",
    )
    spark = run.add_argument_group("Spark")
    spark.add_argument(
        "--master",
        default=None,
        help="Spark master URL (default local[*] on loopback; under spark-submit, spark-submit's)",
    )
    spark.add_argument("--driver-memory", default=None, help="spark.driver.memory, such as 2g")
    spark.add_argument(
        "--conf", action="append", type=_setting, default=[], metavar="KEY=VALUE", help="any Spark setting; repeatable"
    )
    plugin = run.add_argument_group("the quota plugin's decisions (policy strimzi, computed when a limit is given)")
    plugin.add_argument(
        "--min-available-bytes",
        type=int,
        default=None,
        help="per-volume limit in bytes (the plugin's min.available.bytes)",
    )
    plugin.add_argument(
        "--min-available-ratio", type=float, default=None, help="per-volume limit as a share of the volume, 0 to 1"
    )
    plugin.add_argument(
        "--check-interval", type=_duration("--check-interval"), default=60.0, help="seconds or ISO 8601 (PT1M)"
    )
    plugin.add_argument(
        "--throttle-factor-validity",
        type=_duration("--throttle-factor-validity"),
        default=300.0,
        help="seconds or ISO 8601",
    )
    plugin.add_argument(
        "--throttle-factor-fallback", type=float, default=1.0, help="factor while no observation is valid, 0 to 1"
    )
    graded = run.add_argument_group(
        "the first proposal's graded decisions (limits from the snapshots' SoftLimit/HardLimit)"
    )
    graded.add_argument(
        "--max-age",
        type=_duration("--max-age"),
        default=None,
        help="freshness of a snapshot; default 3 check intervals",
    )
    graded.add_argument(
        "--missing-data-action", choices=["pause", "open"], default="pause", help="decision when no snapshot is fresh"
    )
    graded.add_argument(
        "--throttle-factor-step",
        type=float,
        default=DEFAULT_STEP,
        help="the factor's steps: it falls at once to a step and rises half a step late; 0 follows the exact factor",
    )
    analysis = run.add_argument_group("forecast and client analysis")
    analysis.add_argument(
        "--forecast-window",
        type=_duration("--forecast-window"),
        default=7 * 86400.0,
        help="history the trend is fitted on",
    )
    analysis.add_argument(
        "--client-window", type=_duration("--client-window"), default=60.0, help="client analysis window"
    )
    analysis.add_argument("--quota-window-num", type=int, default=11, help="the brokers' quota.window.num")
    analysis.add_argument(
        "--quota-window-size",
        type=_duration("--quota-window-size"),
        default=1.0,
        help="the brokers' quota.window.size.seconds",
    )
    analysis.add_argument(
        "--recommend-percentile",
        type=float,
        default=0.99,
        help="percentile of a client's rate the recommended quota starts from",
    )
    analysis.add_argument("--recommend-headroom", type=float, default=1.2, help="factor on that percentile")
    run.add_argument(
        "--state",
        metavar="DIR",
        help="keep the run's state here (created when missing): a run with no input file new or changed since the "
        "last one, and the same settings, starts no Spark and changes nothing; otherwise it runs in full and says why",
    )
    run.add_argument("--no-report", dest="report", action="store_false", help="skip the HTML report")
    run.add_argument("--quiet", dest="progress", action="store_false", help="no progress lines on stderr")
    sample = commands.add_parser(
        "generate",
        help="write a synthetic fleet history (snapshots, traffic, quotas, topic plan) to try the job on",
        formatter_class=_HelpFormatter,
    )
    sample.add_argument("--out", required=True, metavar="DIR", help="directory for the generated files")
    sample.add_argument("--clusters", type=int, default=3, help="clusters in the fleet")
    sample.add_argument("--brokers", type=int, default=3, help="brokers per cluster")
    sample.add_argument("--hours", type=float, default=48, help="hours of history")
    return top


def config_from_args(args: argparse.Namespace) -> PipelineConfig:
    return PipelineConfig(
        snapshots=args.snapshots,
        out=args.out,
        traffic=args.traffic,
        quotas=args.quotas,
        proposed_quotas=args.proposed_quotas,
        topic_thresholds=args.topic_thresholds,
        guard_decisions=args.guard_decisions,
        master=args.master,
        driver_memory=args.driver_memory,
        cluster=args.cluster,
        since=args.since,
        until=args.until,
        plausible_window=args.plausible_window,
        max_timeline_rows=args.max_timeline_rows,
        min_available_bytes=args.min_available_bytes,
        min_available_ratio=args.min_available_ratio,
        check_interval=args.check_interval,
        throttle_factor_validity=args.throttle_factor_validity,
        throttle_factor_fallback=args.throttle_factor_fallback,
        max_age=args.max_age,
        missing_data_action=args.missing_data_action,
        throttle_factor_step=args.throttle_factor_step,
        forecast_window=args.forecast_window,
        client_window=args.client_window,
        quota_window_num=args.quota_window_num,
        quota_window_size=args.quota_window_size,
        recommend_percentile=args.recommend_percentile,
        recommend_headroom=args.recommend_headroom,
        report=args.report,
        progress=args.progress,
        spark_conf=dict(args.conf),
        state=args.state,
    )


def main(argv: Sequence[str] | None = None) -> int:
    args = parser().parse_args(argv)
    if args.command == "generate":
        from headroom_pipeline import generate

        print(
            json.dumps(
                generate.write(args.out, clusters=args.clusters, brokers=args.brokers, hours=args.hours), indent=2
            )
        )
        return 0
    with stdout_reserved():
        status, result = _run(args)
    if result is not None:
        print(json.dumps(result), flush=True)
    return status


def _run(args):
    """(exit status, the JSON line's content or None); every message on stderr, secrets masked."""
    from headroom_pipeline import job  # after argument parsing: --help needs no Spark

    try:
        summary = job.run(config_from_args(args))
    except ConfigError as exc:
        return _said("error", exc, EXIT_BAD_INPUT)
    except (job.JobError, SourceUnavailable) as exc:
        return _said("failed", exc, EXIT_FAILED)
    except Exception as exc:  # pylint: disable=broad-except  # whatever it is, it ends in one failure line
        if not type(exc).__module__.startswith(("py4j", "pyspark")):
            sys.stderr.write(mask_secrets("".join(traceback.format_exception(exc))))  # a bug: where it is matters
        return _said("failed", f"{type(exc).__name__}: {job.failure_reason(exc)}", EXIT_FAILED)
    for warning in summary.get("warnings") or []:
        print(f"headroom_pipeline: warning: {mask_secrets(warning)}", file=sys.stderr)
    keys = ("rows_read", "rows_used", "rows_rejected", "out", "report", "warnings", "incremental")
    return 0, {key: summary[key] for key in keys if summary.get(key) is not None and summary.get(key) != []}


def _said(kind, message, status):
    print(f"headroom_pipeline: {kind}: {mask_secrets(str(message))}", file=sys.stderr, flush=True)
    return status, None


@contextlib.contextmanager
def stdout_reserved() -> Iterator[None]:
    """File descriptor 1 points at stderr inside the block and at stdout again after it.

    Spark's JVM, started inside, inherits descriptor 1 as it is then and keeps it: its log lines, stack traces and
    progress output can never reach stdout, nor can its Python workers' or anything printed in this process.
    """
    sys.stdout.flush()
    try:
        saved = os.dup(1)
    except OSError:  # no stdout at all: nothing to keep clean
        yield
        return
    try:
        os.dup2(2, 1)
        yield
    finally:
        sys.stdout.flush()
        os.dup2(saved, 1)
        os.close(saved)
