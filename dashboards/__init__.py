"""The collection's Grafana dashboard: ``headroom-kafka.json`` (for Grafana's file provisioning), the generator that
writes it (``python -m dashboards.generate``) and the reader of its PromQL queries (``dashboards.queries``)."""
