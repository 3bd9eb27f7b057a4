"""The disk guard's decisions beside the replay: each decision the guard recorded (the decisions-*.jsonl[.gz] files of
its history directory) against the decision timeline's of the same cluster and policy at the same check instant.

* Cluster: the record's ClusterId, or ``--cluster`` for a record without one, as for snapshots. Policy: its Policy.
* Instant: T = the first epoch-aligned multiple of the check interval at or after DecidedAt, in whole microseconds
  (decisions.check_instant). The guard records the snapshots of a decision with the decision's own stamp, so T is the
  first of the timeline's instants that takes that observation into account.
* Several decisions of one cluster and policy in one instant (a guard deciding more often than the check interval):
  the last is compared, the others are superseded; of decisions with the same DecidedAt (a record read twice) the one
  with the lowest factor counts as the last, the conservative reading, as among duplicate snapshots.
* Outcome, the first that applies: ``policy not replayed`` (the job did not compute the policy: strimzi needs
  --min-available-bytes or --min-available-ratio), ``superseded``, ``no replay at this instant`` (the timeline has no
  row there: the instant lies before the cluster's first snapshot or after its last, as when the guard's
  observations failed and it recorded decisions without snapshots), ``agrees`` (throttle factors within TOLERANCE and
  the same state), else ``differs``, with ``differs_in`` naming throttle_factor and/or state.

Output columns: COMPARISON_COLUMNS. The guard side is small (one record per decision, one decision per interval and
cluster), so only the timeline's rows at the compared instants are joined to it (a broadcast semi-join first).
"""

from pyspark.sql import Column, DataFrame, Observation, Window
from pyspark.sql import functions as F

from headroom_pipeline import decisions
from headroom_pipeline.config import PipelineConfig

TOLERANCE = 1e-9  # throttle factors this close are the same factor (they are computed in doubles on both sides)
AGREES = "agrees"
DIFFERS = "differs"
SUPERSEDED = "superseded"
POLICY_NOT_REPLAYED = "policy not replayed"
NO_REPLAY_AT_INSTANT = "no replay at this instant"
NOT_REPLAYED = (POLICY_NOT_REPLAYED, NO_REPLAY_AT_INSTANT)
COMPARISON_COLUMNS = [
    "cluster",
    "at",
    "decided_at",
    "policy",
    "outcome",
    "differs_in",
    "guard_throttle_factor",
    "guard_state",
    "guard_reason",
    "replay_throttle_factor",
    "replay_state",
    "replay_observed",
    "replay_fallback_applied",
    "mode",
    "observed",
    "complete",
    "fallback_applied",
    "missing_data_applied",
    "missing_brokers",
    "entities_changed",
    "quota_changes",
    "source",
]
# The figures guard_comparison's observation collects.
COMPARISON_COUNTS = ("decisions", "compared", "agreeing", "differences", "superseded", "not_replayed")
_KEYS = ["cluster", "policy", "at"]


def guard_comparison(
    guard: DataFrame, timeline: DataFrame, config: PipelineConfig, observation: Observation | None = None
) -> DataFrame:
    """One row per guard decision (COMPARISON_COLUMNS) with the replay's decision beside it and the outcome.

    ``guard``: the GUARD_DECISION_ROWS frame (ingest.load_guard_decisions). ``timeline``: the decision timeline
    (cluster, at, policy, throttle_factor, state, observed, fallback_applied). ``observation``: a pyspark
    Observation that the first action on the result fills with COMPARISON_COUNTS.
    """
    interval = decisions.check_interval_micros(config)
    replayed = decisions.replayed_policies(config)
    named = guard.withColumnsRenamed(
        {"throttle_factor": "guard_throttle_factor", "state": "guard_state", "decision_reason": "guard_reason"}
    )
    instants = named.withColumn(
        "at", F.timestamp_micros(decisions.check_instant(F.unix_micros("decided_at"), interval))
    )
    last_first = Window.partitionBy(*_KEYS).orderBy(
        F.col("decided_at").desc(), "guard_throttle_factor", "guard_state", "guard_reason", "source"
    )
    ranked = instants.withColumns(
        {"is_last": F.row_number().over(last_first) == 1, "policy_replayed": F.col("policy").isin(*replayed)}
    )
    wanted = ranked.where(F.col("is_last") & F.col("policy_replayed")).select(*_KEYS).distinct()
    replay = timeline.select(
        *_KEYS,
        F.col("throttle_factor").alias("replay_throttle_factor"),
        F.col("state").alias("replay_state"),
        F.col("observed").alias("replay_observed"),
        F.col("fallback_applied").alias("replay_fallback_applied"),
    ).join(F.broadcast(wanted), _KEYS, "left_semi")
    joined = ranked.join(replay, _KEYS, "left")
    factor_differs = F.abs(F.col("guard_throttle_factor") - F.col("replay_throttle_factor")) > F.lit(TOLERANCE)
    state_differs = F.col("guard_state") != F.col("replay_state")
    differs_in = F.filter(
        F.array(F.when(factor_differs, F.lit("throttle_factor")), F.when(state_differs, F.lit("state"))),
        lambda field: field.isNotNull(),
    )
    outcome = (
        F.when(~F.col("policy_replayed"), F.lit(POLICY_NOT_REPLAYED))
        .when(~F.col("is_last"), F.lit(SUPERSEDED))
        .when(F.col("replay_state").isNull(), F.lit(NO_REPLAY_AT_INSTANT))
        .when(F.size(differs_in) == 0, F.lit(AGREES))
        .otherwise(F.lit(DIFFERS))
    )
    judged = joined.withColumn("outcome", outcome)
    result = judged.withColumn("differs_in", F.when(F.col("outcome").isin(AGREES, DIFFERS), differs_in)).select(
        *COMPARISON_COLUMNS
    )
    if observation is not None:
        result = result.observe(observation, *_counts())
    return result


def figures_of(comparison: DataFrame) -> dict[str, int]:
    """COMPARISON_COUNTS of a comparison written already (the job takes them from its observation instead)."""
    row = comparison.agg(*_counts()).first()
    assert row is not None, "an aggregation without grouping has one row, even over no rows"
    return {key: int(row[key]) for key in COMPARISON_COUNTS}


def _counted(condition: Column) -> Column:
    return F.count(F.when(condition, True))


def _counts():
    outcome = F.col("outcome")
    return (
        F.count(F.lit(1)).alias("decisions"),
        _counted(outcome.isin(AGREES, DIFFERS)).alias("compared"),
        _counted(outcome == AGREES).alias("agreeing"),
        _counted(outcome == DIFFERS).alias("differences"),
        _counted(outcome == SUPERSEDED).alias("superseded"),
        _counted(outcome.isin(*NOT_REPLAYED)).alias("not_replayed"),
    )
