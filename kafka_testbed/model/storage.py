"""Log directories and partition logs on real filesystems."""

import errno
import os
import struct
import threading

SEGMENT = "00000000000000000000.log"
_HEAD = struct.Struct(">qi")


class StorageFailure(Exception):
    """An I/O error on a log dir; Kafka takes the dir offline until the broker restarts (KAFKA_STORAGE_ERROR)."""


class LogDir:
    """One entry of ``log.dirs``. Offline when an I/O error happened, the directory vanished, or the
    filesystem under it changed since the broker started (an unmounted volume)."""

    def __init__(self, path):
        self.path = os.path.abspath(path)
        os.makedirs(self.path, exist_ok=True)
        self._device = os.stat(self.path).st_dev
        self.failed = False

    def online(self, offline_by_fault=()):
        if self.failed or self.path in offline_by_fault:
            return False
        try:
            return os.stat(self.path).st_dev == self._device
        except OSError:
            return False

    def sizes(self):
        """(total, usable) bytes: usable is what an unprivileged writer may still use (f_bavail), as Kafka reports
        it."""
        st = os.statvfs(self.path)
        return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize

    def partition_path(self, topic, partition):
        return os.path.join(self.path, f"{topic}-{partition}")

    def partitions(self):
        """{(topic, partition): size in bytes} of the partition directories present in this log dir."""
        found = {}
        for name in os.listdir(self.path):
            topic, sep, index = name.rpartition("-")
            if not sep or not index.isdigit():
                continue
            full = os.path.join(self.path, name)
            found[(topic, int(index))] = sum(entry.stat().st_size for entry in os.scandir(full) if entry.is_file())
        return found


class PartitionLog:
    """The single segment of one partition replica: batches appended as sent, indexed in memory."""

    def __init__(self, directory):
        self.directory = directory
        self.path = os.path.join(directory, SEGMENT)
        self.lock = threading.Lock()
        self.index = []  # (base offset, last offset, position, size, max timestamp)
        self.indexed_size = 0

    def create(self):
        os.makedirs(self.directory, exist_ok=True)
        if not os.path.exists(self.path):
            open(self.path, "ab").close()  # pylint: disable=consider-using-with

    def _refresh(self):
        """Index batches appended since the last look (another process, the leader, may append to a follower's log)."""
        try:
            size = os.path.getsize(self.path)
        except FileNotFoundError:
            return
        if size <= self.indexed_size:
            if size < self.indexed_size:
                self.index, self.indexed_size = [], 0
            else:
                return
        with open(self.path, "rb") as handle:
            handle.seek(self.indexed_size)
            data = handle.read(size - self.indexed_size)
        pos = 0
        while len(data) - pos >= 61:
            base, length = _HEAD.unpack_from(data, pos)
            end = pos + 12 + length
            if end > len(data):
                break
            last = base + struct.unpack_from(">i", data, pos + 23)[0]
            max_ts = struct.unpack_from(">q", data, pos + 35)[0]
            self.index.append((base, last, self.indexed_size + pos, end - pos, max_ts))
            pos = end
        self.indexed_size += pos

    def end_offset(self):
        with self.lock:
            self._refresh()
            return self.index[-1][1] + 1 if self.index else 0

    def size(self):
        try:
            return os.path.getsize(self.path)
        except FileNotFoundError:
            return 0

    def append_batches(self, batches, leader_epoch, assign_offsets):
        """Stamp offsets on the batches and append them atomically with respect to other producers; return the base
        offset."""
        with self.lock:
            self._refresh()
            base = self.index[-1][1] + 1 if self.index else 0
            offset = base
            for batch in batches:
                assign_offsets(batch, offset, leader_epoch)
                offset += batch.last_offset_delta + 1
            self._append(b"".join(bytes(batch.data) for batch in batches))
            return base

    def copy_tail_from(self, source):
        """Replication stand-in: append the bytes this replica lacks; replicas are byte-identical prefixes of the
        leader."""
        have, want = self.size(), source.size()
        if want <= have:
            return
        with open(source.path, "rb") as handle:
            handle.seek(have)
            data = handle.read(want - have)
        with self.lock:
            self._append(data)

    def _append(self, payload):
        """Append bytes; on a full disk roll back the partial write and fail."""
        start = self.size()
        try:
            with open(self.path, "ab") as handle:
                handle.write(payload)
                handle.flush()
        except OSError as exc:
            try:
                os.truncate(self.path, start)
            except OSError:
                pass
            reason = "No space left on device" if exc.errno == errno.ENOSPC else exc.strerror
            raise StorageFailure(
                f"Error while appending records to {os.path.basename(self.directory)} in dir "
                f"{os.path.dirname(self.directory)}: {reason}"
            ) from exc

    def read(self, offset, max_bytes):
        """Batches from the one containing ``offset``, up to max_bytes but always at least one whole batch (KIP-74)."""
        with self.lock:
            self._refresh()
            first = None
            for i, entry in enumerate(self.index):
                if entry[1] >= offset:
                    first = i
                    break
            if first is None:
                return b""
            start = self.index[first][2]
            end = start + self.index[first][3]
            for entry in self.index[first + 1 :]:
                if entry[2] + entry[3] - start > max_bytes:
                    break
                end = entry[2] + entry[3]
        with open(self.path, "rb") as handle:
            handle.seek(start)
            return handle.read(end - start)

    def _batch_bytes(self, entry):
        with open(self.path, "rb") as handle:
            handle.seek(entry[2])
            return handle.read(entry[3])

    def batch_for_timestamp(self, timestamp):
        """The first batch holding a record at or after ``timestamp`` (its max timestamp is), or None: the batch that
        Kafka's time index lookup leads to; the caller finds the record in it."""
        with self.lock:
            self._refresh()
            entry = next((entry for entry in self.index if entry[4] >= timestamp), None)
        return None if entry is None else self._batch_bytes(entry)

    def batch_with_max_timestamp(self):
        """The first batch holding the log's largest timestamp (Kafka's time index keeps the first), or None when
        empty."""
        with self.lock:
            self._refresh()
            best = None
            for entry in self.index:
                if best is None or entry[4] > best[4]:
                    best = entry
        return None if best is None else self._batch_bytes(best)
