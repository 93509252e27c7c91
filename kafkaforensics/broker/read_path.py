"""The replay broker's read path: Metadata, FindCoordinator, ListOffsets and Fetch, answered from the
partitions a :class:`~kafkaforensics.broker.replay.ReplayBroker` serves (record bytes left in their
segment files, :class:`~kafkaforensics.log.file_region.FileRegion` as Segment.read returns them, for
the edge to sendfile)."""
from __future__ import annotations

import bisect
import logging
from typing import NamedTuple

from specs.kafka_errors import (INVALID_TOPIC, NONE, OFFSET_OUT_OF_RANGE, UNKNOWN_SERVER_ERROR, UNKNOWN_TOPIC_ID,
                                UNKNOWN_TOPIC_OR_PARTITION)
from specs.message_types import typed
from specs.messages import (FetchRequest, FetchResponse, FindCoordinatorRequest, FindCoordinatorResponse,
                            ListOffsetsRequest, ListOffsetsResponse, MetadataRequest, MetadataResponse)
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.topic_creation import valid_topic
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.file_region import FileRegion
from kafkaforensics.log import offset_index
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.log.segment import LOG, LogOffsetPosition, Segment, file_name, offset_for_timestamp

#: ListOffsets' special timestamps (-4: the local log start, KIP-405)
EARLIEST, LATEST, MAX_TIMESTAMP, EARLIEST_LOCAL = -2, -1, -3, -4

_log = logging.getLogger("kfx.serve")


def valid_batches(s: LiveLog):
    """The partition's batches whose CRC holds (a damaged batch's timestamps and records are not
    trusted); only those where the load skipped batches for their CRC are checked again."""
    for seg in s.segments:
        for b in seg.batches():
            if not s.crc_unchecked(seg.base_offset, b.position) or b.crc_valid():
                yield b


def _batch_start_before(entries: list, region: FileRegion) -> int:
    """The byte of the offset index's last entry but one inside ``region`` (a batch start: the batches
    before it are whole), or the region's start when the index names fewer than two there."""
    i = bisect.bisect_right(entries, region.end, key=_position) - 2
    return entries[i][1] if i >= 0 and entries[i][1] > region.position else region.position


def _position(entry: tuple[int, int]) -> int:
    return entry[1]


class NextBatch(NamedTuple):
    """Where a consumer's next Fetch of a partition begins, seen by the walk that cut the last one's
    region to whole batches: the batch after them (``at``, as ``segment.translate_offset(offset)``
    finds it) and the bytes of the batches walked before it (each with offsets below ``offset``)."""
    segment: Segment
    offset: int
    at: LogOffsetPosition
    walked: frozenset


class _Walked:
    """What :meth:`ReadPath._walk_whole` saw: the last whole batch's end and next offset, the batch
    after it (whole in the file, past the region or at ``limit``), the bytes of the batches walked,
    and whether their offsets rose from batch to batch."""

    def __init__(self) -> None:
        self.found: tuple[int, int] | None = None
        self.after: LogOffsetPosition | None = None
        self.walked: set[int] = set()
        self.rising = True


class ReadPath:
    """The read APIs over the broker ``b`` that holds this object (``b.read_path``)."""

    def __init__(self, broker):
        self.b = broker
        self.served_damage: set = set()  # (partition, byte, segment) of damaged batches served and logged
        #: (topic, partition) -> where the next Fetch of it begins, as the last one's walk saw it
        self.next_batch: dict[tuple[str | None, int | None], NextBatch] = {}

    def metadata(self, version: int, body) -> MetadataResponse:
        """Metadata (a topic it names is auto-created first, inline, unless the edge has done it)."""
        req: MetadataRequest = typed(ApiKey.METADATA, body)
        mr = MetadataResponse
        plan = self.b.topic_creation.plan_auto_create(version, req)
        if plan:
            self.b.topic_creation.make_and_adopt(None, plan)
        names = self.b.metadata_names(version, req)
        topics = self.b.topics()
        names = sorted(topics) if names is None else names
        out = []
        for name in names:
            if not valid_topic(name):
                out.append(mr.MetadataResponseTopic(error_code=INVALID_TOPIC, name=name, partitions=[]))
            elif name not in topics:
                out.append(mr.MetadataResponseTopic(error_code=UNKNOWN_TOPIC_OR_PARTITION, name=name, partitions=[]))
            else:
                parts = topics[name]
                out.append(mr.MetadataResponseTopic(
                    error_code=NONE, name=name, topic_id=parts[0].topic_id, is_internal=name.startswith("__"),
                    partitions=[mr.MetadataResponsePartition(error_code=NONE, partition_index=s.partition,
                                                             leader_id=self.b.node_id, leader_epoch=s.leader_epoch,
                                                             replica_nodes=[self.b.node_id],
                                                             isr_nodes=[self.b.node_id], offline_replicas=[])
                                for s in parts]))
        return mr(brokers=[mr.MetadataResponseBroker(node_id=self.b.node_id, host=self.b.host, port=self.b.port,
                                                     rack=None)],
                  cluster_id=self.b.cluster_id(), controller_id=self.b.node_id, topics=out, error_code=NONE)

    def find_coordinator(self, version: int, body) -> FindCoordinatorResponse:
        """This broker coordinates every group and transactional id (v4+: each key asked)."""
        fcr = FindCoordinatorResponse
        if version >= 4:
            req: FindCoordinatorRequest = typed(ApiKey.FIND_COORDINATOR, body)
            return fcr(coordinators=[fcr.Coordinator(key=k, node_id=self.b.node_id, host=self.b.host, port=self.b.port,
                                                     error_code=NONE, error_message=None)
                                     for k in req.coordinator_keys])
        return fcr(node_id=self.b.node_id, host=self.b.host, port=self.b.port, error_code=NONE, error_message=None)

    def list_offsets(self, version: int, body) -> ListOffsetsResponse:
        """As Kafka's ReplicaManager answers a client: earliest (-2), latest (-1, the last stable
        offset for read_committed), max timestamp (-3, the first record with the largest timestamp)
        or by timestamp; a found offset is kept only below the last fetchable offset (the LSO for
        read_committed, the high watermark otherwise), else -1.  Each with its leader epoch."""
        req: ListOffsetsRequest = typed(ApiKey.LIST_OFFSETS, body)
        lor = ListOffsetsResponse
        committed = req.isolation_level == 1
        topics = []
        for t in req.topics:
            parts = []
            for p in t.partitions:
                s = self.b.partitions.get((t.name, p.partition_index))
                r = lor.ListOffsetsPartitionResponse(partition_index=p.partition_index, error_code=NONE,
                                                     timestamp=-1, offset=-1, leader_epoch=-1)
                if s is None:
                    r.error_code = UNKNOWN_TOPIC_OR_PARTITION
                    parts.append(r)
                    continue
                fetchable = s.last_stable_offset if committed else s.log_end_offset
                if p.timestamp == EARLIEST:
                    start = self.log_start(s)
                    r.offset, r.leader_epoch = start, s.epoch_at(start)
                elif p.timestamp == EARLIEST_LOCAL:
                    r.offset, r.leader_epoch = s.log_start_offset, s.epoch_at(s.log_start_offset)
                elif p.timestamp == LATEST:
                    r.offset, r.leader_epoch = fetchable, s.leader_epoch
                else:
                    if p.timestamp == MAX_TIMESTAMP:
                        offset, ts, epoch = self.offset_of_max_timestamp(s)
                    else:
                        offset, ts = self.offset_for_time(s, p.timestamp)
                        epoch = s.epoch_at(offset)
                    if 0 <= offset < fetchable:
                        r.offset, r.timestamp, r.leader_epoch = offset, ts, epoch
                parts.append(r)
            topics.append(lor.ListOffsetsTopicResponse(name=t.name, partitions=parts))
        return lor(topics=topics)

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

    def fetch(self, version: int, body) -> FetchResponse:
        """Whole batches of each partition asked, within the request's and each partition's byte
        budgets (the first batch always, KIP-74); read_committed stops at the last stable offset."""
        req: FetchRequest = typed(ApiKey.FETCH, body)
        fr = FetchResponse
        committed = req.isolation_level == 1
        budget = req.max_bytes
        responses: list[FetchResponse.FetchableTopicResponse] = []
        for t in req.topics:
            parts = []
            name = self.b.fetched_topic(version, t)
            for p in t.partitions:
                s = self.b.partitions.get((name, p.partition))
                r = fr.PartitionData(partition_index=p.partition, error_code=NONE, high_watermark=-1,
                                     last_stable_offset=-1, log_start_offset=-1, aborted_transactions=None,
                                     preferred_read_replica=-1, records=b"")
                if s is None:
                    r.error_code = UNKNOWN_TOPIC_ID if version >= 13 and name is None else UNKNOWN_TOPIC_OR_PARTITION
                else:
                    r.high_watermark, r.last_stable_offset = s.log_end_offset, s.last_stable_offset
                    r.log_start_offset = self.log_start(s)
                    off = p.fetch_offset
                    if off < r.log_start_offset or off > s.log_end_offset:
                        r.error_code = OFFSET_OUT_OF_RANGE
                    else:
                        limit = s.last_stable_offset if committed else s.log_end_offset
                        try:
                            data, upper = self.read(s, off, min(p.partition_max_bytes, max(budget, 0)), limit,
                                                    first=not any(x.records for tp in responses for x in tp.partitions))
                        except KafkaFormatError as e:  # a remote segment's chunk that does not decode
                            self._log_remote_damage(s, e)
                            r.error_code = UNKNOWN_SERVER_ERROR  # Kafka's answer to a RemoteStorageException
                            parts.append(r)
                            continue
                        budget -= len(data)
                        r.records = data
                        if committed:
                            r.aborted_transactions = self.aborted(s, off, upper)
                parts.append(r)
            responses.append(fr.FetchableTopicResponse(topic=t.topic, topic_id=t.topic_id, partitions=parts))
        return fr(error_code=NONE, session_id=0, responses=responses)

    def remote_of(self, s: LiveLog):
        """The remote tier's segments of ``s`` (:class:`~kafkaforensics.broker.remote_reads.RemotePartition`),
        or None: no tier attached (or no broker, as for a read path used on its own)."""
        return None if self.b is None else self.b.remote.get((s.topic, s.partition))

    def log_start(self, s: LiveLog) -> int:
        """The partition's log start: its remote log start when ``kfx serve --remote`` attached a
        tier that holds it (:mod:`~kafkaforensics.broker.remote_reads`), else the local one."""
        rp = self.remote_of(s)
        return s.log_start_offset if rp is None else min(rp.log_start_offset, s.log_start_offset)

    def read(self, s: LiveLog, offset: int, max_bytes: int, limit: int, first: bool) -> tuple[FileRegion | bytes, int]:
        """Whole batches from the one that holds ``offset``, at most ``max_bytes`` (but at least one
        batch when ``first``, as KIP-74 says), never past ``limit``; returns them as a FileRegion of
        the segment (sent with sendfile) and the next offset.  As Kafka's LocalLog.read: each segment
        from the one holding ``offset`` is asked (Segment.read, through its cached offset index) until
        one holds a batch at or after it, its region ending at ``limit``'s byte when ``limit`` lies in
        it; the region's cut last batch is left out (this broker sends whole batches).  Below the
        local log start, the remote tier's segment holding ``offset`` is read (bytes, not a region)."""
        rp = self.remote_of(s)
        if rp is not None and offset < s.log_start_offset and offset < limit:
            data, nxt = rp.read(offset, max_bytes, limit, first)
            if data:
                return data, nxt
        if offset >= limit or not s.segments:
            return b"", offset
        start = s.segment_for(offset) or s.segments[0]
        for seg in s.segments[s.segments.index(start):]:
            if seg.base_offset >= limit:
                break
            info = seg.read(offset, max_bytes, self._max_position(s, seg, limit), min_one_message=first,
                            at=self._known_batch(s, seg, offset))
            if info is not None:
                return self._whole_batches(s, seg, info.records, offset, limit)
        return b"", offset

    @staticmethod
    def _max_position(s: LiveLog, seg, limit: int) -> int | None:
        """The byte of ``seg`` a read stops at for ``limit`` (the high watermark's or last stable
        offset's position, as LocalLog.read's maxPosition): the start of the batch starting at
        ``limit`` (the end of one holding it past its base) when the segment holds it below the log
        end, else None (the segment's end)."""
        if limit >= s.log_end_offset:
            return None
        holder = s.segment_for(limit)
        if holder is None or holder.base_offset != seg.base_offset:
            return None
        at = seg.translate_offset(limit)
        if at is None:
            return None
        with seg.walk(at.position, sequential=False) as walk:
            b = next(iter(walk), None)
        return at.position if b is None or b.base_offset >= limit else at.position + at.size

    def _known_batch(self, s: LiveLog, seg: Segment, offset: int) -> LogOffsetPosition | None:
        """The batch holding ``offset`` when the last Fetch of ``s`` ended just before it in ``seg``
        (a consumer going on), exactly as ``seg.translate_offset(offset)`` would find it: its walk from
        the offset index's entry for ``offset`` would pass only batches the last walk saw below
        ``offset``, then meet this one.  None: not known, translate_offset looks."""
        hint = self.next_batch.get((s.topic, s.partition))
        if hint is None or hint.segment is not seg or hint.offset != offset:
            return None
        _entry, pos = offset_index.lookup(seg.offset_index(), offset, seg.base_offset)
        return hint.at if pos == hint.at.position or pos in hint.walked else None

    def _whole_batches(self, s: LiveLog, seg: Segment, region: FileRegion, offset: int,
                       limit: int) -> tuple[FileRegion | bytes, int]:
        """``region`` cut to the whole batches it holds below ``limit``, and the offset after them
        ((b"", ``offset``) when it holds none).  Only the region's last batches are walked, from the
        offset index's last entry but one inside it (every batch before that entry's byte is whole),
        unless a batch the load skipped for its CRC may lie in it: then each batch is walked and such
        a batch logged (:meth:`_log_damage`).  The walk reads one batch header more, the next Fetch's
        first batch, kept in :attr:`next_batch`."""
        seen = None
        if not s.crc_skipped.get(seg.base_offset):
            start = _batch_start_before(seg.offset_index(), region)
            if start > region.position:
                seen = self._walk_whole(s, seg, start, region.end, limit, check=False)
        if seen is None or seen.found is None:
            seen = self._walk_whole(s, seg, region.position, region.end, limit, check=True)
        if seen.found is None:
            return b"", offset
        end, nxt = seen.found
        key = (s.topic, s.partition)
        if seen.after is not None and seen.rising and seen.after.offset >= nxt:
            self.next_batch[key] = NextBatch(seg, nxt, seen.after, frozenset(seen.walked))
        else:
            self.next_batch.pop(key, None)
        return FileRegion(region.path, region.position, end - region.position), nxt

    def _walk_whole(self, s: LiveLog, seg: Segment, start: int, end: int, limit: int, check: bool) -> _Walked:
        """The walk from byte ``start``: the last whole batch up to byte ``end`` below ``limit`` and the
        batch after it (:class:`_Walked`); with ``check``, a batch the load skipped for its CRC is
        checked and logged."""
        seen, last = _Walked(), -1
        with seg.walk(start, sequential=False) as walk:  # headers only: no readahead
            for b in walk:
                if b.base_offset >= limit or b.position + b.size > end:
                    seen.after = LogOffsetPosition(b.last_offset, b.position, b.size)
                    break
                if check and s.crc_unchecked(seg.base_offset, b.position):
                    self._log_damage(s, seg, b)
                seen.rising = seen.rising and b.base_offset > last
                last = b.last_offset
                seen.walked.add(b.position)
                seen.found = (b.position + b.size, b.next_offset)
        return seen

    def _log_damage(self, s: LiveLog, seg, b) -> None:
        """A batch whose CRC fails is served as stored, as Kafka serves it (its fetch path checks no
        CRC): the client's CRC check meets it; logged at start and, once, here.  Only the batches the
        load skipped for their CRC are checked (every other one was checked at load or append)."""
        key = (s.path, b.position, seg.base_offset)
        if key not in self.served_damage and not b.crc_valid():
            self.served_damage.add(key)
            _log.warning("%s-%d: serving the batch at byte %d of %s (offset %d) as stored: its CRC "
                         "fails; the client's CRC check raises CorruptRecordException",
                         s.topic, s.partition, b.position, file_name(seg.base_offset, LOG), b.base_offset)

    def _log_remote_damage(self, s: LiveLog, e: KafkaFormatError) -> None:
        """A remote segment that could not be read for a fetch, logged once (located: the object, its
        byte, the chunk); the fetch's partition is answered UNKNOWN_SERVER_ERROR."""
        key = (s.path, str(e))
        if key not in self.served_damage:
            self.served_damage.add(key)
            _log.warning("%s-%d: a fetch from the remote tier failed: %s", s.topic, s.partition, e)

    def aborted(self, s: LiveLog, first: int, upper: int) -> list[FetchResponse.AbortedTransaction]:
        """The aborted transactions a read_committed fetch of [first, upper) carries
        (UnifiedLog.collectAbortedTransactions: from the segment holding ``first`` on, each segment's
        LogSegment.collectAbortedTxns, until one says the search is complete)."""
        rp = self.remote_of(s)
        out = rp.aborted(first, min(upper, s.log_start_offset)) if rp is not None and first < s.log_start_offset else []
        floor = s.segment_for(first)
        for seg in s.segments:
            if (floor is not None and seg.base_offset < floor.base_offset) or seg.base_offset >= upper:
                continue
            found, complete = seg.collect_aborted_txns(first, upper)
            out += [FetchResponse.AbortedTransaction(producer_id=e.producer_id, first_offset=e.first_offset)
                    for e in found]
            if complete:
                break
        return out
