"""How many exchanges (shuffles and broadcasts) the job's plans hold: the decision timeline's and the forecast's.

Counted on the physical plans Spark makes before it runs them (adaptive execution may later turn a shuffle join
into a broadcast one, but never adds a shuffle), for the query each of the job's two stages runs: the forecast (whose
observation also gives the spans the timeline's size is bounded by) and the timeline. The plans' shape does not depend
on the input's size.
"""

import dataclasses
import os
import re

SHUFFLE = re.compile(r"\bExchange (hashpartitioning|rangepartitioning|SinglePartition|RoundRobinPartitioning)")


def exchanges(frame):
    """{"shuffle": n, "broadcast": m} of a DataFrame's physical plan."""
    plan = frame._jdf.queryExecution().executedPlan().toString()  # pylint: disable=protected-access
    return {"shuffle": len(SHUFFLE.findall(plan)), "broadcast": plan.count("BroadcastExchange")}


def _summed(counts):
    return {
        "shuffle": sum(item["shuffle"] for item in counts),
        "broadcast": sum(item["broadcast"] for item in counts),
        "queries": len(counts),
    }


def job_exchanges(data, out, config):
    """Run the job on ``data`` into ``out`` (its volumes/ feeds the plans), then count its stages' exchanges."""
    from headroom_pipeline import decisions, forecast, job, schemas
    from headroom_pipeline.config import PipelineConfig
    from headroom_pipeline.session import spark_session, timeline_settings

    spark = spark_session("local[*]", app_name="pipeline-plans")
    try:
        job.run(
            PipelineConfig(
                snapshots=data, out=out, min_available_ratio=config.min_available_ratio, report=False, progress=False
            )
        )
        volumes = spark.read.schema(schemas.VOLUMES).parquet(os.path.join(out, "volumes"))
        timeline = decisions.decision_timeline(
            volumes, dataclasses.replace(config, max_timeline_rows=None)
        )  # sized by the forecast's spans
        with timeline_settings(spark):  # the settings the job plans it with
            timeline_exchanges = _summed([exchanges(timeline)])
        return {
            "decision timeline": timeline_exchanges,
            "forecast": _summed([exchanges(forecast.volume_forecast(volumes, config))]),
        }
    finally:
        spark.stop()
