"""Produce, Fetch and ListOffsets against the partition logs."""

import time

from kafka_testbed import errors
from kafka_testbed.model import records, topics
from kafka_testbed.model.storage import StorageFailure

LATEST, EARLIEST, MAX_TIMESTAMP, EARLIEST_LOCAL, LATEST_TIERED = -1, -2, -3, -4, -5
_NOT_LEADER = errors.NOT_LEADER_OR_FOLLOWER


def _resolve(view, version, name, topic_id, id_version):
    """(name, view entry, error) for a topic named by name, or by id from ``id_version`` on."""
    if version >= id_version:
        for candidate, entry in view.items():
            if entry[0]["id"] == str(topic_id):
                return candidate, entry, errors.NONE
        return None, None, errors.UNKNOWN_TOPIC_ID
    entry = view.get(name)
    return name, entry, errors.NONE if entry else errors.UNKNOWN_TOPIC_OR_PARTITION


def _local_log(broker, name, entry, index):
    """This broker's log for a partition it leads: (log, error code)."""
    topic, parts = entry
    if index < 0 or index >= len(parts):
        return None, errors.UNKNOWN_TOPIC_OR_PARTITION
    log = broker.partition_log(topic, name, index)
    if log is None:
        return None, _NOT_LEADER
    # A replica in an offline log dir answers KAFKA_STORAGE_ERROR before leadership is looked at
    # (ReplicaManager.getPartitionOrError: HostedPartition.Offline).
    log_dir = broker.log_dir_for(topic["partitions"][index]["dirs"][str(broker.node_id)])
    if log_dir is None or not log_dir.online(broker.offline_by_fault()):
        return None, errors.KAFKA_STORAGE_ERROR
    if parts[index][1] != broker.node_id:
        return None, _NOT_LEADER
    try:
        log.create()  # a partition created a moment ago may not have its directory yet
    except OSError as exc:
        broker.fail_log_dir(log_dir, exc)
        return None, errors.KAFKA_STORAGE_ERROR
    return log, errors.NONE


# -- Produce ------------------------------------------------------------------------------------------------------
def _produce_partition(broker, name, entry, index, payload, acks):
    result = {
        "index": index,
        "error_code": errors.NONE,
        "base_offset": -1,
        "log_append_time_ms": -1,
        "log_start_offset": -1,
        "record_errors": [],
        "error_message": None,
    }
    log, code = _local_log(broker, name, entry, index)
    if code != errors.NONE:
        result["error_code"] = code
        return result
    topic, parts = entry
    max_bytes = int(topics.topic_setting(broker, topic, "max.message.bytes"))
    if payload is None or len(payload) > max_bytes:
        result["error_code"] = errors.MESSAGE_TOO_LARGE if payload else errors.CORRUPT_MESSAGE
        result["error_message"] = (
            f"The request included a message larger than the max message size the server will accept ({max_bytes})."
        )
        return result
    try:
        batches = records.split_batches(payload)
    except records.InvalidBatch as exc:
        result["error_code"], result["error_message"] = exc.error_code, str(exc)
        return result
    if "compact" in topics.topic_setting(broker, topic, "cleanup.policy"):
        for position, batch in enumerate(batches):
            if records.keyless_record(batch):
                message = records.COMPACTED_TOPIC_KEYLESS.format(f"{name}-{index}")
                result["error_code"], result["error_message"] = errors.INVALID_RECORD, message
                result["record_errors"] = [{"batch_index": position, "batch_index_error_message": message}]
                return result
    isr = parts[index][3]
    if acks == -1 and len(isr) < int(topics.topic_setting(broker, topic, "min.insync.replicas")):
        result["error_code"] = errors.NOT_ENOUGH_REPLICAS
        result["error_message"] = (
            f"The size of the current ISR {isr} is insufficient to satisfy the min.isr requirement"
        )
        return result
    try:
        base = log.append_batches(batches, parts[index][2], records.assign_offsets)
    except StorageFailure as exc:
        broker.fail_log_dir(broker.log_dir_for(topic["partitions"][index]["dirs"][str(broker.node_id)]), exc)
        result["error_code"], result["error_message"] = errors.KAFKA_STORAGE_ERROR, str(exc)
        return result
    for follower in isr:
        if follower != broker.node_id:
            _replicate(broker, topic, name, index, follower, log)
    result["base_offset"] = base
    result["log_start_offset"] = 0
    return result


def _replicate(broker, topic, name, index, follower, leader_log):
    """Followers in the ISR get the bytes at once; a failing follower volume does not fail the produce (as in Kafka)."""
    target = broker.partition_log(topic, name, index, follower)
    if target is None:
        return
    try:
        target.create()
        target.copy_tail_from(leader_log)
    except (OSError, StorageFailure):
        pass


def produce(broker, _connection, request):
    body = request.body
    view = broker.topics_view()
    responses = []
    for topic_data in body.topic_data:
        name, entry, code = _resolve(view, request.version, topic_data.name, getattr(topic_data, "topic_id", None), 13)
        partitions = []
        for part in topic_data.partition_data:
            if body.acks not in (-1, 0, 1):
                partitions.append({"index": part.index, "error_code": errors.INVALID_REQUIRED_ACKS, "base_offset": -1})
            elif code != errors.NONE:
                partitions.append({"index": part.index, "error_code": code, "base_offset": -1})
            else:
                partitions.append(_produce_partition(broker, name, entry, part.index, part.records, body.acks))
        response = {"partition_responses": partitions}
        if request.version >= 13:
            response["topic_id"] = topic_data.topic_id
        else:
            response["name"] = topic_data.name
        responses.append(response)
    if body.acks == 0:
        return None
    return {"responses": responses, "throttle_time_ms": 0}


# -- Fetch --------------------------------------------------------------------------------------------------------
def _fetch_once(broker, request, view):
    body = request.body
    budget = body.max_bytes if request.version >= 3 else 0x7FFFFFFF
    total = 0
    responses = []
    for topic_req in body.topics:
        name, entry, code = _resolve(view, request.version, topic_req.topic, getattr(topic_req, "topic_id", None), 13)
        partitions = []
        for part in topic_req.partitions:
            result = {
                "partition_index": part.partition,
                "error_code": code,
                "high_watermark": -1,
                "last_stable_offset": -1,
                "log_start_offset": -1,
                "aborted_transactions": [] if body.isolation_level == 1 else None,
                "preferred_read_replica": -1,
                "records": b"",
            }
            if code == errors.NONE:
                log, result["error_code"] = _local_log(broker, name, entry, part.partition)
                if log is not None:
                    end = log.end_offset()
                    result.update(high_watermark=end, last_stable_offset=end, log_start_offset=0)
                    if part.fetch_offset < 0 or part.fetch_offset > end:
                        result["error_code"] = errors.OFFSET_OUT_OF_RANGE
                    elif part.fetch_offset < end and budget - total > 0:
                        data = log.read(part.fetch_offset, min(part.partition_max_bytes, budget - total))
                        total += len(data)
                        result["records"] = data
            partitions.append(result)
        response = {"partitions": partitions}
        if request.version >= 13:
            response["topic_id"] = topic_req.topic_id
        else:
            response["topic"] = topic_req.topic
        responses.append(response)
    return responses, total


def fetch(broker, _connection, request):
    """Answer at once when min_bytes are there or an error occurred, else long-poll up to max_wait_ms."""
    body = request.body
    deadline = time.monotonic() + max(body.max_wait_ms, 0) / 1000.0
    while True:
        view = broker.topics_view()
        responses, total = _fetch_once(broker, request, view)
        has_error = any(p["error_code"] for r in responses for p in r["partitions"])
        if total >= max(body.min_bytes, 1) or has_error or time.monotonic() >= deadline or broker.stopping.is_set():
            break
        time.sleep(min(0.02, max(deadline - time.monotonic(), 0)))
    return {"throttle_time_ms": 0, "error_code": errors.NONE, "session_id": 0, "responses": responses}


# -- ListOffsets --------------------------------------------------------------------------------------------------
def _list_offset(log, timestamp):
    end = log.end_offset()
    if timestamp == LATEST:
        return -1, end
    if timestamp in (EARLIEST, EARLIEST_LOCAL):
        return -1, 0
    if timestamp == LATEST_TIERED:
        return -1, -1
    if timestamp == MAX_TIMESTAMP:
        batch = log.batch_with_max_timestamp()
        found = records.record_with_max_timestamp(batch) if batch is not None else None
    else:
        batch = log.batch_for_timestamp(timestamp)
        found = records.first_record_at_or_after(batch, timestamp) if batch is not None else None
    return (found[1], found[0]) if found else (-1, -1)


def list_offsets(broker, _connection, request):
    view = broker.topics_view()
    topics_out = []
    for topic_req in request.body.topics:
        entry = view.get(topic_req.name)
        partitions = []
        for part in topic_req.partitions:
            result = {
                "partition_index": part.partition_index,
                "error_code": errors.NONE,
                "timestamp": -1,
                "offset": -1,
                "leader_epoch": -1,
            }
            if entry is None:
                result["error_code"] = errors.UNKNOWN_TOPIC_OR_PARTITION
            else:
                log, result["error_code"] = _local_log(broker, topic_req.name, entry, part.partition_index)
                if log is not None:
                    result["timestamp"], result["offset"] = _list_offset(log, part.timestamp)
                    result["leader_epoch"] = entry[1][part.partition_index][2]
            partitions.append(result)
        topics_out.append({"name": topic_req.name, "partitions": partitions})
    return {"throttle_time_ms": 0, "topics": topics_out}


# -- InitProducerId -----------------------------------------------------------------------------------------------
def init_producer_id(broker, _connection, request):
    """Producer ids for idempotent producers, unique across the cluster. Transactions are not modelled: a
    transactional id finds no coordinator. Sequence numbers are accepted as sent (no duplicate detection)."""
    if request.body.transactional_id is not None:
        return {
            "throttle_time_ms": 0,
            "error_code": errors.COORDINATOR_NOT_AVAILABLE,
            "producer_id": -1,
            "producer_epoch": -1,
        }

    def allocate(state):
        state["next_producer_id"] = state.get("next_producer_id", 1000) + 1
        return state["next_producer_id"] - 1

    return {
        "throttle_time_ms": 0,
        "error_code": errors.NONE,
        "producer_id": broker.state.update(allocate),
        "producer_epoch": 0,
    }
