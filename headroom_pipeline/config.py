"""The job's settings, checked before Spark starts: a bad value names the option, the value and what is allowed."""

import dataclasses
import datetime
from typing import Optional, Union

from ansible_collections.headroom.kafka.plugins.module_utils.durations import DurationError, parse_positive_duration
from ansible_collections.headroom.kafka.plugins.module_utils.factor_steps import DEFAULT_STEP, StepError, check_step

# The instants the modules accept are the ones the pipeline accepts.
from ansible_collections.headroom.kafka.plugins.module_utils.option_checks import OptionError, parse_datetime
from ansible_collections.headroom.kafka.plugins.module_utils.volume_limits import (
    MISSING_DATA_ACTIONS,
    LimitError,
    validate_strimzi_limits,
)

# Per cluster: a year of minutes for 38 volumes. A cluster beyond it is more likely a mistake (a stamp decades off,
# a one-second --check-interval) than its history; each cluster's timeline is judged in one task.
DEFAULT_MAX_TIMELINE_ROWS = 20_000_000
DEFAULT_PLAUSIBLE_WINDOW = 366 * 86400.0


class ConfigError(ValueError):
    """A setting that cannot work; the message names the option."""


@dataclasses.dataclass
class PipelineConfig:  # pylint: disable=too-many-instance-attributes
    snapshots: str
    out: str
    traffic: Optional[str] = None
    quotas: Optional[str] = None
    proposed_quotas: Optional[str] = None
    topic_thresholds: Optional[str] = None
    # The disk guard's decision records, compared with the replay; None: those of a --snapshots guard history
    # directory, when it holds some (the job sets it).
    guard_decisions: Optional[str] = None
    master: Optional[str] = None  # None: local[*], or spark-submit's master under spark-submit
    driver_memory: Optional[str] = None
    cluster: str = "default"  # cluster name for snapshots and guard decisions without ClusterId
    # Plausible time stamps (checks.TimeWindow): explicit bounds, else this far either side of the input's median.
    since: Union[datetime.datetime, str, None] = None
    until: Union[datetime.datetime, str, None] = None
    plausible_window: float = DEFAULT_PLAUSIBLE_WINDOW
    max_timeline_rows: Optional[int] = (
        DEFAULT_MAX_TIMELINE_ROWS  # check instants x volumes of one cluster; None: no bound
    )
    # The shipped plugin (policy strimzi): computed when one of the two limits is given.
    min_available_bytes: Optional[int] = None
    min_available_ratio: Optional[float] = None
    check_interval: float = 60.0  # seconds between the plugin's checks (storage.check-interval)
    throttle_factor_validity: float = 300.0  # seconds (throttle.factor.validity.duration, PT5M)
    throttle_factor_fallback: float = 1.0  # throttle.factor.fallback
    # The first proposal (policy graded): limits come from the snapshots' SoftLimit / HardLimit.
    max_age: Optional[float] = None  # seconds a snapshot stays fresh; default 3 check intervals
    missing_data_action: str = "pause"
    throttle_factor_step: float = DEFAULT_STEP  # the factor's steps (factor_steps); 0: the exact factor
    # Forecast
    forecast_window: float = 7 * 86400.0  # seconds of history the trend is fitted on
    # Client quota analysis
    client_window: float = 60.0  # seconds per analysis window
    quota_window_num: int = 11  # quota.window.num
    quota_window_size: float = 1.0  # quota.window.size.seconds
    recommend_percentile: float = 0.99
    recommend_headroom: float = 1.2
    report: bool = True
    progress: bool = True
    # A directory the run keeps its state in (run_state): a run with nothing new to read starts no Spark and changes
    # nothing. None: every run is a full one.
    state: Optional[str] = None
    spark_conf: dict = dataclasses.field(default_factory=dict)

    @property
    def freshness(self) -> float:
        return self.max_age if self.max_age is not None else 3 * self.check_interval

    @property
    def strimzi_enabled(self) -> bool:
        return self.min_available_bytes is not None or self.min_available_ratio is not None

    def validate(self) -> "PipelineConfig":
        """Raise ConfigError for the first setting that cannot work."""
        if self.strimzi_enabled:
            try:
                validate_strimzi_limits(self.min_available_bytes, self.min_available_ratio)
            except LimitError as exc:
                raise ConfigError(str(exc).replace("min_available_", "--min-available-")) from None
        for option, value in (
            ("--check-interval", self.check_interval),
            ("--throttle-factor-validity", self.throttle_factor_validity),
            ("--forecast-window", self.forecast_window),
            ("--client-window", self.client_window),
            ("--quota-window-size", self.quota_window_size),
        ):
            if not value > 0:
                raise ConfigError(f"{option} must be a positive duration (got {value!r})")
        self.since, self.until = instant(self.since, "--since"), instant(self.until, "--until")
        if self.since is not None and self.until is not None and not self.since < self.until:
            raise ConfigError(
                f"--since must be before --until (got {self.since.isoformat()} and {self.until.isoformat()})"
            )
        if not self.plausible_window > 0:
            raise ConfigError(f"--plausible-window must be a positive duration (got {self.plausible_window!r})")
        if self.max_timeline_rows is not None and not (
            isinstance(self.max_timeline_rows, int) and self.max_timeline_rows >= 1
        ):
            raise ConfigError(f"--max-timeline-rows must be a whole number >= 1 (got {self.max_timeline_rows!r})")
        if self.max_age is not None and not self.max_age > 0:
            raise ConfigError(f"--max-age must be a positive duration (got {self.max_age!r})")
        if not 0.0 <= self.throttle_factor_fallback <= 1.0:
            raise ConfigError(
                "--throttle-factor-fallback must be between 0.0 and 1.0 inclusive "
                f"(got {self.throttle_factor_fallback!r})"
            )
        try:
            check_step(self.throttle_factor_step, "--throttle-factor-step")
        except StepError as exc:
            raise ConfigError(str(exc)) from None
        if self.missing_data_action not in MISSING_DATA_ACTIONS:
            raise ConfigError(
                f"--missing-data-action must be one of {', '.join(MISSING_DATA_ACTIONS)} "
                f"(got {self.missing_data_action!r})"
            )
        if self.quota_window_num < 2:
            raise ConfigError(
                f"--quota-window-num must be at least 2, as Kafka requires (got {self.quota_window_num!r})"
            )
        if not 0.0 < self.recommend_percentile <= 1.0:
            raise ConfigError(f"--recommend-percentile must be in (0, 1] (got {self.recommend_percentile!r})")
        if not self.recommend_headroom >= 1.0:
            raise ConfigError(f"--recommend-headroom must be at least 1.0 (got {self.recommend_headroom!r})")
        return self


def seconds(value: float | str, option: str) -> float:
    """Seconds from a number or an ISO 8601 duration (PT1M); ConfigError naming the option otherwise."""
    try:
        return parse_positive_duration(value, option).total_seconds()
    except DurationError as exc:
        raise ConfigError(str(exc)) from None


def instant(value: datetime.datetime | str | None, option: str) -> datetime.datetime | None:
    """An aware UTC datetime from ISO 8601 text with a zone (or an aware datetime), from 1970 through 9999, by the
    modules' rules (option_checks.parse_datetime); None stays None."""
    if value is None:
        return None
    if isinstance(value, datetime.datetime) and value.tzinfo is None:
        raise ConfigError(
            f"{option} must be an ISO 8601 date-time with a time zone, such as 2026-11-01T00:00:00Z (got {value!r})"
        )
    try:
        return parse_datetime(value, option)
    except OptionError as exc:
        raise ConfigError(str(exc)) from None
