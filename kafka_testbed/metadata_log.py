"""What a KRaft controller wrote to its metadata log, read from the log segments on disk: the client quota records.

A test that must know how many times a quota was really changed asks the log rather than the clients that asked
for the change: the controller writes a QuotaRecord only when a value differs from the one it holds
(ClientQuotaControlManager), so two clients that set the same value leave one record.

The segments are record batches of the v2 format (read with kafka-python's reader); each record's value is a
metadata record framed as ``frame version, api key, version`` (unsigned varints) followed by the message.
"""

import glob
import os
import struct

from kafka.record import MemoryRecords

QUOTA_RECORD = 14  # the QuotaRecord's api key in Kafka's metadata schema
METADATA_PARTITION = "__cluster_metadata-0"


class MetadataLogError(Exception):
    """A segment that does not read as a metadata log."""


def quota_records(metadata_dir):
    """Every QuotaRecord in the node's metadata log, oldest first: dicts with ``offset``, ``entity`` ({type: name,
    name None for a default}), ``key``, ``value`` and ``remove``."""
    found = []
    for segment in sorted(glob.glob(os.path.join(metadata_dir, METADATA_PARTITION, "*.log"))):
        with open(segment, "rb") as handle:
            records = MemoryRecords(handle.read())
        while records.has_next():
            batch = records.next_batch()
            if batch is None:  # a batch still being written: the rest of the segment is not there yet
                break
            if batch.is_control_batch:
                continue
            for record in batch:
                decoded = _quota_record(record.value)
                if decoded is not None:
                    decoded["offset"] = record.offset
                    found.append(decoded)
    return found


class _Reader:
    def __init__(self, data):
        self.data, self.position = bytes(data), 0

    def varint(self):
        """An unsigned varint."""
        shift = value = 0
        while True:
            byte = self.data[self.position]
            self.position += 1
            value |= (byte & 0x7F) << shift
            if not byte & 0x80:
                return value
            shift += 7

    def compact_string(self):
        length = self.varint() - 1  # compact: length + 1, 0 for null
        if length < 0:
            return None
        text = self.data[self.position : self.position + length].decode("utf-8")
        self.position += length
        return text

    def skip_tagged_fields(self):
        for _index in range(self.varint()):
            self.varint()  # the tag
            self.position += self.varint()

    def take(self, fmt):
        (value,) = struct.unpack_from(fmt, self.data, self.position)
        self.position += struct.calcsize(fmt)
        return value


def _quota_record(value):
    """The QuotaRecord in one record's value (flexible version 0), or None for any other metadata record."""
    if not value:
        return None
    reader = _Reader(value)
    try:
        reader.varint()  # frame version
        if reader.varint() != QUOTA_RECORD:
            return None
        reader.varint()  # the record's version: 0 is the only one
        entity = {}
        for _index in range(reader.varint() - 1):
            entity_type = reader.compact_string()
            entity[entity_type] = reader.compact_string()
            reader.skip_tagged_fields()
        key = reader.compact_string()
        number = reader.take(">d")
        remove = bool(reader.take(">B"))
    except (IndexError, struct.error, UnicodeDecodeError) as exc:
        raise MetadataLogError(f"a QuotaRecord that does not decode: {exc}") from exc
    return {"entity": entity, "key": key, "value": number, "remove": remove}
