"""The job's stages and the outputs each writes: the one list that the job (job.py) and the report (report*.py) read.

A stage has the name its progress lines and summary.json's "timings_seconds" use, the condition under which it runs
(a stage without one runs every time) and, when summary.json records it, where. The job pairs each stage with the
function that runs it, in the order they run (job.PIPELINE). Each output names the stage that writes it; what the
outputs hold, column by column, is in the usage pipeline guide (docs/docsite/rst/guide_pipeline.rst, "Outputs").

Nothing here imports Spark or another module of the package (the configuration's type aside, for type checkers).
"""

import dataclasses
from typing import TYPE_CHECKING, Any, Callable, Optional, Tuple, TypeVar

if TYPE_CHECKING:
    from headroom_pipeline.config import PipelineConfig

Recorded = TypeVar("Recorded")


@dataclasses.dataclass(frozen=True)
class Stage:
    name: str  # as the progress lines and summary.json's "timings_seconds" say it
    # (config, topic plan) -> whether it runs (truthy); None: on every run
    when: Optional[Callable[["PipelineConfig", Optional[dict[str, Any]]], object]] = None
    recorded_at: Tuple[str, ...] = ()  # where summary.json records what it did: ("stages", key) or ("report",)
    reads_summary: bool = False  # it reads the finished outputs, summary.json among them

    @property
    def optional(self) -> bool:
        return self.when is not None

    def runs(self, config: "PipelineConfig", plan: dict[str, Any] | None) -> bool:
        return self.when is None or bool(self.when(config, plan))

    def record(self, summary: dict[str, Any], value: Recorded) -> Recorded:
        """Put what the stage did (its counts, the report's path) where summary.json keeps it; return ``value``."""
        *path, key = self.recorded_at
        place = summary
        for name in path:
            place = place.setdefault(name, {})
        place[key] = value
        return value

    def recorded(self, summary: dict[str, Any]) -> object:
        """What ``summary`` (a summary.json's content) records of the stage; None when it records nothing
        (did not run)."""
        value = summary if self.recorded_at else None
        for name in self.recorded_at:
            value = value.get(name) if isinstance(value, dict) else None
        return value


def _with_traffic(config, unused_plan):
    return config.traffic


def _with_topic_plan(config, plan):
    return config.traffic and plan


def _with_guard_decisions(config, unused_plan):
    return config.guard_decisions


def _with_report(config, unused_plan):
    return config.report


def _with_state(config, unused_plan):
    return config.state


START_SPARK = Stage("start Spark")
READ_SNAPSHOTS = Stage("read snapshots")
READ_TRAFFIC = Stage("read traffic", when=_with_traffic)
READ_GUARD_DECISIONS = Stage("read guard decisions", when=_with_guard_decisions)
REJECT = Stage("reject unusable records")
FORECAST = Stage("volume forecast", recorded_at=("stages", "forecast"))
DECISIONS = Stage("decision timeline", recorded_at=("stages", "decisions"))
GUARD_COMPARISON = Stage("guard comparison", when=_with_guard_decisions, recorded_at=("stages", "guard_comparison"))
CLIENTS = Stage("client quota analysis", when=_with_traffic, recorded_at=("stages", "clients"))
TOPICS = Stage("topic thresholds", when=_with_topic_plan, recorded_at=("stages", "topics"))
CARRY_TRAFFIC = Stage("carry traffic analyses", when=_with_traffic)  # an incremental run's: its traffic is as it was
CHECKPOINT = Stage("checkpoint", when=_with_state)  # what the next run resumes from
REPORT = Stage("report", when=_with_report, recorded_at=("report",), reads_summary=True)  # the page links summary.json


@dataclasses.dataclass(frozen=True)
class Output:
    name: str  # in DIR: a directory, or summary.json
    stage: Optional[Stage]  # the stage that writes it; None: the job itself, last, on every run
    description: str  # as the report's list of outputs says it


# In the order the report lists them.
OUTPUTS = (
    Output("summary.json", None, "counts, timings and settings of the run"),
    Output("volumes", READ_SNAPSHOTS, "normalized history, one row per volume and snapshot"),
    Output("decisions", DECISIONS, "throttle factor and state per cluster and check instant, per policy"),
    Output(
        "guard_comparison", GUARD_COMPARISON, "each decision of the disk guard beside the replay's at its check instant"
    ),
    Output("forecast", FORECAST, "growth trend per volume and when it crosses its limits"),
    Output("clients", CLIENTS, "client traffic per window against its quota"),
    Output("client_recommendations", CLIENTS, "recommended client quotas"),
    Output("topics", TOPICS, "topic windows over their threshold"),
    Output("topic_thresholds", TOPICS, "the topic threshold plan"),
    Output("rejected", REJECT, "every input record that could not be used, with the reason"),
    Output("report", REPORT, "the HTML report with its PNG charts"),
)
_WRITER = {output.name: output.stage for output in OUTPUTS}


def written(name: str, summary: dict[str, Any] | None) -> bool:
    """Whether the run of ``summary`` wrote output ``name``: an optional stage's outputs only when the summary records
    that stage; a summary without "stages" (or none at all) says nothing, so whatever is there counts."""
    summary = summary or {}
    stage = _WRITER[name]
    return summary.get("stages") is None or stage is None or not stage.optional or stage.recorded(summary) is not None
