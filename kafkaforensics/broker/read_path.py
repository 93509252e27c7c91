"""The replay broker's read path: Metadata, FindCoordinator, ListOffsets and Fetch, answered from the
partitions a :class:`~kafkaforensics.broker.replay.ReplayBroker` serves (record bytes left in their
segment files, :class:`~kafkaforensics.broker.protocol.FileRegion`, for the edge to sendfile)."""
from __future__ import annotations

import logging
import os

from specs.kafka_errors import INVALID_TOPIC, NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_TOPIC_ID, UNKNOWN_TOPIC_OR_PARTITION
from specs.message_types import typed
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.protocol import FileRegion
from kafkaforensics.broker.topic_creation import valid_topic
from kafkaforensics.log import offset_index
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.log.segment import INDEX, LOG, file_name, offset_for_timestamp

#: ListOffsets' special timestamps
EARLIEST, LATEST, MAX_TIMESTAMP = -2, -1, -3

_log = logging.getLogger("kfx.serve")


def valid_batches(s: LiveLog):
    """The partition's batches whose CRC holds (a damaged batch's timestamps and records are not trusted)."""
    for seg in s.segments:
        for b in seg.batches():
            if b.crc_valid():
                yield b


class ReadPath:
    """The read APIs over the broker ``b`` that holds this object (``b.read_path``)."""

    def __init__(self, broker):
        self.b = broker
        self.index_cache: dict[str, tuple] = {}  # .index path -> (size, mtime, entries)
        self.served_damage: set = set()  # (partition, byte, segment) of damaged batches served and logged

    def metadata(self, version: int, body) -> dict:
        """Metadata (a topic it names is auto-created first, inline, unless the edge has done it)."""
        req = typed(ApiKey.METADATA, body)
        plan = self.b.topic_creation.plan_auto_create(version, req)
        if plan:
            self.b.topic_creation.make_and_adopt({}, plan)
        names = self.b.metadata_names(version, req)
        topics = self.b.topics()
        names = sorted(topics) if names is None else names
        out = []
        for name in names:
            if not valid_topic(name):
                out.append({"ErrorCode": INVALID_TOPIC, "Name": name, "Partitions": []})
            elif name not in topics:
                out.append({"ErrorCode": UNKNOWN_TOPIC_OR_PARTITION, "Name": name, "Partitions": []})
            else:
                parts = topics[name]
                out.append({"ErrorCode": NONE, "Name": name, "TopicId": parts[0].topic_id,
                            "IsInternal": name.startswith("__"),
                            "Partitions": [{"ErrorCode": NONE, "PartitionIndex": s.partition,
                                            "LeaderId": self.b.node_id,
                                            "LeaderEpoch": s.leader_epoch, "ReplicaNodes": [self.b.node_id],
                                            "IsrNodes": [self.b.node_id], "OfflineReplicas": []} for s in parts]})
        return {"Brokers": [{"NodeId": self.b.node_id, "Host": self.b.host, "Port": self.b.port, "Rack": None}],
                "ClusterId": self.b.cluster_id(), "ControllerId": self.b.node_id, "Topics": out, "ErrorCode": NONE}

    def find_coordinator(self, version: int, body) -> dict:
        """This broker coordinates every group and transactional id (v4+: each key asked)."""
        me = {"NodeId": self.b.node_id, "Host": self.b.host, "Port": self.b.port, "ErrorCode": NONE,
              "ErrorMessage": None}
        if version >= 4:
            return {"Coordinators": [dict(me, Key=k) for k in typed(ApiKey.FIND_COORDINATOR, body).coordinator_keys]}
        return me

    def list_offsets(self, version: int, body) -> dict:
        """As Kafka's ReplicaManager answers a client: earliest (-2), latest (-1, the last stable
        offset for read_committed), max timestamp (-3, the first record with the largest timestamp)
        or by timestamp; a found offset is kept only below the last fetchable offset (the LSO for
        read_committed, the high watermark otherwise), else -1.  Each with its leader epoch."""
        req = typed(ApiKey.LIST_OFFSETS, body)
        committed = req.isolation_level == 1
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                s = self.b.partitions.get((t.name, p.partition_index))
                r = {"PartitionIndex": p.partition_index, "ErrorCode": NONE, "Timestamp": -1, "Offset": -1,
                     "LeaderEpoch": -1}
                if s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_OR_PARTITION
                    parts.append(r)
                    continue
                fetchable = s.last_stable_offset if committed else s.log_end_offset
                if p.timestamp == EARLIEST:
                    r.update(Offset=s.log_start_offset, LeaderEpoch=s.epoch_at(s.log_start_offset))
                elif p.timestamp == LATEST:
                    r.update(Offset=fetchable, LeaderEpoch=s.leader_epoch)
                else:
                    if p.timestamp == MAX_TIMESTAMP:
                        offset, ts, epoch = self.offset_of_max_timestamp(s)
                    else:
                        offset, ts = self.offset_for_time(s, p.timestamp)
                        epoch = s.epoch_at(offset)
                    if 0 <= offset < fetchable:
                        r.update(Offset=offset, Timestamp=ts, LeaderEpoch=epoch)
                parts.append(r)
            topics.append({"Name": t.name, "Partitions": parts})
        return {"Topics": topics}

    def offset_for_time(self, s: LiveLog, ts: int) -> tuple[int, int]:
        """First offset at or after the log start whose record timestamp is >= ts (Kafka's ListOffsets
        by time, UnifiedLog.fetchOffsetByTimestamp): each segment looked up through its time index
        (Segment.find_offset_by_timestamp); a segment whose times all lie below ``ts`` costs the
        batches after its last time-index entry."""
        found = offset_for_timestamp(s.segments, ts, s.log_start_offset)
        return (-1, -1) if found is None else (found.offset, found.timestamp)

    def offset_of_max_timestamp(self, s: LiveLog) -> tuple[int, int, int]:
        """(offset, timestamp, leader epoch) of the first record carrying the partition's largest
        timestamp (ListOffsets -3, KIP-734), as Kafka 3.8+ answers it (UnifiedLog.fetchOffsetByTimestamp,
        KAFKA-16310): the first batch with that max timestamp, its ``offsetOfMaxTimestamp`` (the first
        record whose timestamp is the batch's max; none for magic 0) and the batch's own partition
        leader epoch (-1 when it has none). No such record: (-1, -1, -1)."""
        best = None
        for b in valid_batches(s):
            if best is None or b.max_timestamp > best.max_timestamp:
                best = b
        if best is None or best.magic == 0:
            return -1, -1, -1
        for r in best.records():
            if r.timestamp == best.max_timestamp:
                epoch = best.partition_leader_epoch if best.magic >= 2 else -1
                return r.offset, r.timestamp, max(epoch, -1)
        return -1, -1, -1

    def fetch(self, version: int, body) -> dict:
        """Whole batches of each partition asked, within the request's and each partition's byte
        budgets (the first batch always, KIP-74); read_committed stops at the last stable offset."""
        req = typed(ApiKey.FETCH, body)
        committed = req.isolation_level == 1
        budget = req.max_bytes
        responses = []
        for t in req.topics:
            parts = []
            name = self.b.fetched_topic(version, t)
            for p in t.partitions:
                s = self.b.partitions.get((name, p.partition))
                r = {"PartitionIndex": p.partition, "ErrorCode": NONE, "HighWatermark": -1,
                     "LastStableOffset": -1, "LogStartOffset": -1, "AbortedTransactions": None,
                     "PreferredReadReplica": -1, "Records": b""}
                if s is None:
                    r["ErrorCode"] = UNKNOWN_TOPIC_ID if version >= 13 and name is None else UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.update(HighWatermark=s.log_end_offset, LastStableOffset=s.last_stable_offset,
                             LogStartOffset=s.log_start_offset)
                    off = p.fetch_offset
                    if off < s.log_start_offset or off > s.log_end_offset:
                        r["ErrorCode"] = OFFSET_OUT_OF_RANGE
                    else:
                        limit = s.last_stable_offset if committed else s.log_end_offset
                        data, upper = self.read(s, off, min(p.partition_max_bytes, max(budget, 0)), limit,
                                                first=not any(x["Records"] for tp in responses
                                                              for x in tp["Partitions"]))
                        budget -= len(data)
                        r["Records"] = data
                        if committed:
                            r["AbortedTransactions"] = self.aborted(s, off, upper)
                parts.append(r)
            responses.append({"Topic": t.topic, "TopicId": t.topic_id, "Partitions": parts})
        return {"ErrorCode": NONE, "SessionId": 0, "Responses": responses}

    def read(self, s: LiveLog, offset: int, max_bytes: int, limit: int, first: bool) -> tuple[FileRegion | bytes, int]:
        """Whole batches from the one that holds ``offset``, at most ``max_bytes`` (but at least one
        batch when ``first``, as KIP-74 says), never past ``limit``; returns them as a FileRegion of
        the segment (sent with sendfile) and the next offset."""
        start = s.segment_for(offset) or (s.segments[0] if s.segments else None)
        if start is None or offset >= limit:
            return b"", offset
        for seg in s.segments[s.segments.index(start):]:
            base = seg.base_offset
            entries = self._index(seg.path(INDEX), base)
            pos = offset_index.lookup(entries, offset, base)[1] if entries else 0
            with seg.walk(pos) as walk:  # LogSegment.read's walk from the index's position, whole batches
                begin = end = None
                upper = offset
                for b in walk:
                    if b.last_offset < offset:
                        continue
                    if b.base_offset >= limit:
                        break
                    # a batch whose CRC fails is served as stored, as Kafka serves it (its fetch path
                    # checks no CRC): the client's CRC check meets it (logged at start and here)
                    if (s.path, b.position, base) not in self.served_damage and not b.crc_valid():
                        self.served_damage.add((s.path, b.position, base))
                        _log.warning("%s-%d: serving the batch at byte %d of %s (offset %d) as stored: its CRC "
                                     "fails; the client's CRC check raises CorruptRecordException",
                                     s.topic, s.partition, b.position, file_name(base, LOG), b.base_offset)
                    if begin is None:
                        begin = b.position
                    elif b.position + b.size - begin > max_bytes:
                        break
                    if b.position + b.size - begin > max_bytes and not first:
                        begin = None
                        break
                    end = b.position + b.size
                    upper = b.next_offset
                if begin is not None and end is not None:
                    return FileRegion(seg.log, begin, end - begin), upper
        return b"", offset

    def _index(self, path: str, base: int) -> list:
        """A segment's offset index entries, parsed once and re-read only when the file changes."""
        try:
            st = os.stat(path)
        except OSError:
            return []
        hit = self.index_cache.get(path)
        if hit is not None and hit[0] == st.st_size and hit[1] == st.st_mtime_ns:
            return hit[2]
        with open(path, "rb") as f:
            entries, _ = offset_index.read_entries(f.read(), base)
        self.index_cache[path] = (st.st_size, st.st_mtime_ns, entries)
        return entries

    def aborted(self, s: LiveLog, first: int, upper: int) -> list[dict]:
        """The aborted transactions a read_committed fetch of [first, upper) carries
        (UnifiedLog.collectAbortedTransactions: from the segment holding ``first`` on, each segment's
        LogSegment.collectAbortedTxns, until one says the search is complete)."""
        out = []
        floor = s.segment_for(first)
        for seg in s.segments:
            if (floor is not None and seg.base_offset < floor.base_offset) or seg.base_offset >= upper:
                continue
            found, complete = seg.collect_aborted_txns(first, upper)
            out += [{"ProducerId": e.producer_id, "FirstOffset": e.first_offset} for e in found]
            if complete:
                break
        return out
