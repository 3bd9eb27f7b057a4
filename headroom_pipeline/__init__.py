"""headroom_pipeline: fleet-scale history of Kafka volume usage and client traffic on Spark (PySpark).

Reads the usage snapshots that ``headroom.kafka.usage_snapshot`` writes, client traffic exported from broker
metrics and client quotas as ``client_quota_info`` returns them; writes the quota plugin's decision timeline, volume
forecasts, client quota analysis, topic threshold analysis and an HTML report. Run ``python -m headroom_pipeline
run --help``.
"""

__version__ = "1.0.0"
