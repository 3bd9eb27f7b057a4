"""Prometheus' text format read back as samples, with prometheus_client's parser: what an exporter's page, the guard's
endpoint or its textfile says, by name and labels, whatever the writer's number format."""

from prometheus_client.parser import text_string_to_metric_families


def samples(text):
    """{(sample name, frozenset of (label, value) pairs): value} of every sample in ``text``."""
    return {
        (sample.name, frozenset(sample.labels.items())): sample.value
        for family in text_string_to_metric_families(text)
        for sample in family.samples
    }


def sample(text, name, **labels):
    """The value of the first sample named ``name`` whose labels include ``labels``, or None."""
    wanted = set(labels.items())
    for (sample_name, sample_labels), value in samples(text).items():
        if sample_name == name and wanted <= sample_labels:
            return value
    return None
