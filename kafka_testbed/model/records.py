"""Record batches (magic v2) as the broker stores and validates them.

A batch is kept on disk exactly as the producer sent it; the broker only rewrites the base
offset (bytes 0-7) and the partition leader epoch (bytes 12-15), which the CRC does not cover.
"""

import struct

from kafka.record.default_records import DefaultRecordBatch
from kafka.record.util import calc_crc32c

HEADER_SIZE = 61
_BATCH_HEAD = struct.Struct(">qiib")  # base offset, batch length, leader epoch, magic
_CRC = struct.Struct(">I")
_LAST_OFFSET_DELTA = struct.Struct(">i")
_TIMESTAMPS = struct.Struct(">qq")  # base timestamp, max timestamp
_COUNT = struct.Struct(">i")
_LOG_OVERHEAD = 12  # base offset + length fields precede the counted bytes
COMPACTED_TOPIC_KEYLESS = "Compacted topic cannot accept message without key in topic partition {}."


class InvalidBatch(Exception):
    def __init__(self, error_code, message):
        super().__init__(message)
        self.error_code = error_code


class Batch:
    """One record batch within a buffer: where it is and the header fields the broker needs."""

    __slots__ = ("data", "last_offset_delta", "max_timestamp", "count")

    def __init__(self, data):
        self.data = data
        (self.last_offset_delta,) = _LAST_OFFSET_DELTA.unpack_from(data, 23)
        _ignored, self.max_timestamp = _TIMESTAMPS.unpack_from(data, 27)
        (self.count,) = _COUNT.unpack_from(data, 57)

    @property
    def base_offset(self):
        return struct.unpack_from(">q", self.data, 0)[0]

    @property
    def last_offset(self):
        return self.base_offset + self.last_offset_delta


def split_batches(buffer):
    """Split a records field into batches, checking framing, magic and CRC as Kafka's LogValidator does."""
    view = memoryview(buffer)
    batches = []
    pos = 0
    while pos < len(view):
        if len(view) - pos < HEADER_SIZE:
            raise InvalidBatch(2, "Record batch is truncated")  # CORRUPT_MESSAGE
        _ignored, length, _ignored, magic = _BATCH_HEAD.unpack_from(view, pos)
        end = pos + _LOG_OVERHEAD + length
        if length < HEADER_SIZE - _LOG_OVERHEAD or end > len(view):
            raise InvalidBatch(2, f"Record batch size {length} is invalid")
        if magic != 2:
            raise InvalidBatch(
                43, f"Record batch magic {magic} is not supported by produce v3+"
            )  # UNSUPPORTED_FOR_MESSAGE_FORMAT
        (crc,) = _CRC.unpack_from(view, pos + 17)
        if calc_crc32c(view[pos + 21 : end]) != crc:
            raise InvalidBatch(2, "Record is corrupt (stored crc does not match computed crc)")
        batches.append(Batch(bytearray(view[pos:end])))
        pos = end
    if not batches:
        raise InvalidBatch(2, "Produce request contains no record batch")
    return batches


def keyless_record(batch):
    """True when any record in the batch has a null key (compacted topics refuse those)."""
    return any(record.key is None for record in DefaultRecordBatch(bytes(batch.data)))


def assign_offsets(batch, base_offset, leader_epoch):
    struct.pack_into(">q", batch.data, 0, base_offset)
    struct.pack_into(">i", batch.data, 12, leader_epoch)


def first_record_at_or_after(data, timestamp):
    """(offset, timestamp) of the first record at or after ``timestamp`` in a stored batch, or None: Kafka answers
    ListOffsets by timestamp with a record, not with its batch (LogSegment.findOffsetByTimestamp)."""
    for item in DefaultRecordBatch(bytes(data)):
        if item.timestamp >= timestamp:
            return item.offset, item.timestamp
    return None


def record_with_max_timestamp(data):
    """(offset, timestamp) of the first record carrying the batch's max timestamp (RecordBatch.offsetOfMaxTimestamp)."""
    batch = DefaultRecordBatch(bytes(data))
    for item in batch:
        if item.timestamp == batch.max_timestamp:
            return item.offset, item.timestamp
    return None
