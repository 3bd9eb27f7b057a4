"""kafka_testbed.metadata_log reads QuotaRecords out of metadata log segments and passes every other record by
(the real controller's log is read in tests/integration/test_guard_under_faults.py)."""

import struct

import pytest
from kafka.record import MemoryRecordsBuilder

from kafka_testbed.metadata_log import METADATA_PARTITION, MetadataLogError, quota_records


def varint(value):
    out = bytearray()
    while True:
        byte = value & 0x7F
        value >>= 7
        if value:
            out.append(byte | 0x80)
        else:
            out.append(byte)
            return bytes(out)


def compact(text):
    if text is None:
        return varint(0)
    data = text.encode()
    return varint(len(data) + 1) + data


def quota_record(entity, key, value, remove=False):
    """A QuotaRecord (api key 14, version 0) framed as the controller writes it."""
    body = varint(len(entity) + 1)
    for entity_type, name in entity:
        body += compact(entity_type) + compact(name) + varint(0)
    body += compact(key) + struct.pack(">d", value) + struct.pack(">B", remove) + varint(0)
    return varint(1) + varint(14) + varint(0) + body


def segment(tmp_path, values):
    builder = MemoryRecordsBuilder(magic=2, compression_type=0, batch_size=1 << 20, offset=40)
    for value in values:
        builder.append(timestamp=0, key=None, value=value)
    builder.close()
    directory = tmp_path / METADATA_PARTITION
    directory.mkdir()
    (directory / "00000000000000000000.log").write_bytes(bytes(builder.buffer()))
    return str(tmp_path)


def test_quota_records_are_read_with_their_offsets_and_other_records_are_passed_by(tmp_path):
    registration = varint(1) + varint(17) + varint(3) + b"\x00" * 12  # a broker registration, not a quota
    metadata_dir = segment(
        tmp_path,
        [
            registration,
            quota_record([("user", None)], "producer_byte_rate", 5.0),
            quota_record([("client-id", "app"), ("user", "alice")], "consumer_byte_rate", 0.0, remove=True),
        ],
    )
    assert quota_records(metadata_dir) == [
        {"entity": {"user": None}, "key": "producer_byte_rate", "value": 5.0, "remove": False, "offset": 41},
        {
            "entity": {"client-id": "app", "user": "alice"},
            "key": "consumer_byte_rate",
            "value": 0.0,
            "remove": True,
            "offset": 42,
        },
    ]


def test_a_quota_record_cut_short_is_an_error_naming_it(tmp_path):
    metadata_dir = segment(tmp_path, [quota_record([("user", "bob")], "producer_byte_rate", 1.0)[:-6]])
    with pytest.raises(MetadataLogError, match="a QuotaRecord that does not decode"):
        quota_records(metadata_dir)


def test_no_metadata_log_has_no_quota_records(tmp_path):
    assert not quota_records(str(tmp_path))
