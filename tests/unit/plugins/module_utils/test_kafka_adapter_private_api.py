"""The one piece of kafka-python's private API the adapter relies on, pinned: an upgrade that changes it fails here,
by name, instead of failing every module that talks to Kafka."""

import importlib.metadata
import inspect
import os

import pytest
from kafka.admin import KafkaAdminClient
from kafka.net.manager import KafkaConnectionManager
from packaging.specifiers import SpecifierSet

from ansible_collections.headroom.kafka.plugins.module_utils import kafka_adapter

REQUIREMENTS = os.path.join(os.path.dirname(os.path.abspath(__file__)), *[os.pardir] * 4, "requirements.txt")


def test_the_installed_kafka_python_is_in_the_range_the_adapter_was_written_for():
    installed = importlib.metadata.version("kafka-python")
    assert installed in SpecifierSet(kafka_adapter.KAFKA_PYTHON_RANGE), (
        f"kafka-python {installed} is outside {kafka_adapter.KAFKA_PYTHON_RANGE}: "
        "check connection_manager() against it, then widen the range"
    )


def test_the_admin_client_still_keeps_its_connection_manager_with_the_methods_used():
    assert "self._manager = " in inspect.getsource(KafkaAdminClient.__init__), (
        "KafkaAdminClient no longer sets _manager"
    )
    for name in kafka_adapter.MANAGER_METHODS:
        assert callable(getattr(KafkaConnectionManager, name, None)), f"KafkaConnectionManager.{name} is gone"
    assert "self.cluster = " in inspect.getsource(KafkaConnectionManager.__init__), (
        "KafkaConnectionManager no longer has cluster"
    )


def test_the_requirements_pin_the_same_range():
    with open(REQUIREMENTS, encoding="utf-8") as handle:
        pins = [line.split("#")[0].strip() for line in handle if line.startswith("kafka-python")]
    assert pins == ["kafka-python" + kafka_adapter.KAFKA_PYTHON_RANGE]


@pytest.mark.parametrize("admin", [object(), type("Admin", (), {"_manager": object()})()])
def test_a_library_without_it_fails_with_what_to_install(admin):
    with pytest.raises(
        kafka_adapter.KafkaAdapterError,
        match=r"has no KafkaAdminClient\._manager with run, send, wait_for, least_loaded_node "
        r"and cluster.*install kafka-python>=3\.0\.12,<4",
    ):
        kafka_adapter.connection_manager(admin)
