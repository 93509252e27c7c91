"""One partition over both tiers, as Kafka's UnifiedLog reads it (KIP-405): the remote segments from
the remote log start up to the local log start, then the local segments.

Kafka reads an offset below the local log start from the remote tier (RemoteLogManager.read, through
the segments ``__remote_log_metadata`` lists as COPY_SEGMENT_FINISHED), and every offset from the local
log start on from the local segments, even where a remote copy of them exists (local segments are
deleted only after they were copied, so the tiers normally overlap).  :class:`UnifiedLog` is that
model: the segments in order (the remote copies' then the local ones), the remote copies read, the
remote log start and the local log start; its
:meth:`UnifiedLog.partition` is a :class:`~.partition.Partition` every reader (analyze, explain,
groups, dump) walks unchanged.  A remote segment that runs past the local log start is read only up
to its first batch at or past it (the local log holds those offsets)."""
from __future__ import annotations

import os
from contextlib import contextmanager
from dataclasses import dataclass, field, replace

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.partition import Partition
from kafkaforensics.log.remote.tier import RemoteCopy, RemoteTier
from kafkaforensics.log.remote.unified import LOCAL, REMOTE, remote_below
from kafkaforensics.log.segment import Segment
from kafkaforensics.log.tiered import remote_segments

#: the metadata state of a segment Kafka reads (RemoteLogMetadataCache lists only these)
FINISHED = "COPY_SEGMENT_FINISHED"


@dataclass
class UnifiedLog:
    """A partition over both tiers: the local :class:`Partition`, the segments read (:attr:`segments`:
    those of the remote copies read below its log start, :attr:`remote`, then the local ones), every
    remote copy the bucket holds for it, and the ``__remote_log_metadata`` entries (None: the log dir
    holds no such topic)."""
    local: Partition
    #: the segments read, in offset order: the first ``len(remote)`` are the remote copies', the rest local
    segments: list[Segment] = field(default_factory=list)
    #: the remote copies read below the local log start, in offset order (each with its metadata entry)
    remote: list[RemoteCopy] = field(default_factory=list)
    bucket: list[RemoteCopy] = field(default_factory=list)
    #: every object the bucket holds for the partition (parsed keys: orphans and missing objects)
    objects: list = field(default_factory=list)
    metadata: list[dict] | None = None
    #: the topic id the bucket's keys carry, when it differs from ``partition.metadata``'s: not read
    foreign_topic_id: str | None = None
    #: whether the tier is in the plugin's layout and holds objects of the partition's topic (any
    #: partition): then a finished segment of this partition without objects is missing, not elsewhere
    holds_topic: bool = False
    #: topic id -> objects of the partition under another incarnation of the topic (beside its own)
    other_incarnations: dict = field(default_factory=dict)
    #: remote segments that could not be opened (a damaged manifest, chunk or key): located problems
    unreadable: list = field(default_factory=list)

    @property
    def local_log_start(self) -> int | None:
        """The first local segment's base offset (None: no local segment)."""
        return self.local.segments[0].base_offset if self.local.segments else None

    @property
    def remote_log_start(self) -> int | None:
        """The first remote segment's base offset (None: nothing read from the remote tier)."""
        return self.segments[0].base_offset if self.remote else None

    @property
    def tiers(self) -> list[str]:
        """The tier of each of :attr:`segments` (:data:`REMOTE` or :data:`LOCAL`)."""
        return [REMOTE] * len(self.remote) + [LOCAL] * (len(self.segments) - len(self.remote))

    def remote_reads(self) -> list[tuple[RemoteCopy, Segment]]:
        """(remote copy, the segment read of it: cut at the local log start) of each remote copy read."""
        return list(zip(self.remote, self.segments))

    def partition(self) -> Partition:
        """The partition as one :class:`Partition`: remote segments first, then the local ones."""
        if not self.remote:
            return self.local
        return replace(self.local, segments=list(self.segments))


def _local_topic_id(pd: Partition) -> str | None:
    """``partition.metadata``'s topic id (None: no file, or one that does not parse)."""
    try:
        meta = pd.partition_metadata()
    except (KafkaFormatError, OSError):
        return None
    return meta.get("topicId") if meta else None


#: log dir -> (the metadata partitions' files as stamped, remote_segments' answer): replayed once per log dir
_METADATA: dict[str, tuple[tuple, dict]] = {}


def metadata_for(pd: Partition) -> list[dict] | None:
    """The partition's ``__remote_log_metadata`` entries from its own log dir (None: no such topic
    there); the topic is replayed once per log dir while its files are unchanged."""
    if pd.topic_partition is None:
        return None
    stamp = _metadata_stamp(pd.log_dir)
    if not stamp:
        return None
    hit = _METADATA.get(pd.log_dir)
    if hit is None or hit[0] != stamp:
        try:
            hit = _METADATA[pd.log_dir] = (stamp, remote_segments(pd.log_dir))
        except (KafkaFormatError, OSError):
            return None
    return hit[1].get(pd.topic_partition, {"segments": []})["segments"]


def _metadata_stamp(log_dir: str) -> tuple:
    """(name, size, mtime) of every file of the log dir's ``__remote_log_metadata-N`` dirs (() when none)."""
    out: list[tuple[str, int | None, int | None]] = []
    try:
        dirs = sorted(n for n in os.listdir(log_dir) if n.startswith("__remote_log_metadata-"))
        for d in dirs:
            out.append((d, None, None))
            for n in sorted(os.listdir(os.path.join(log_dir, d))):
                st = os.stat(os.path.join(log_dir, d, n))
                out.append((n, st.st_size, st.st_mtime_ns))
    except OSError:
        return tuple(out)
    return tuple(out)


def unify(pd: Partition, tier: RemoteTier | None, metadata: list[dict] | None | str = "log-dir") -> UnifiedLog:
    """The partition ``pd`` over its local log and the remote tier ``tier`` (a
    :class:`~.remote.tier.RemoteTier`; None: local only).  ``metadata``: the partition's
    ``__remote_log_metadata`` entries (default: read from its log dir).  The remote segments read are
    those the metadata lists as COPY_SEGMENT_FINISHED (every segment in the bucket when there is no
    metadata), in offset order, each starting past the one before, below the local log start."""
    meta = metadata_for(pd) if metadata == "log-dir" else metadata
    ul = UnifiedLog(pd, metadata=meta if isinstance(meta, list) else None)
    local = list(pd.segments)
    tp = pd.topic_partition
    if tier is None or tp is None:
        ul.segments = local
        return ul
    ids, own_id = tier.topic_ids(tp[0]), _local_topic_id(pd)
    ul.holds_topic = tier.layout == "aiven" and bool(ids)
    if own_id is not None and ids and own_id not in ids:
        ul.foreign_topic_id = ids[0]   # Kafka reads only objects of the topic's own id
        ul.objects = tier.objects(*tp)
        ul.segments = local
        return ul
    mine = own_id if own_id in ids else None   # one incarnation, the partition's own; else every object
    ul.bucket, ul.objects = remote_below(tier, *tp, None, own_id), tier.objects(*tp, mine)
    ul.other_incarnations = {i: tier.objects(*tp, i) for i in ids if mine is not None and i != mine}
    chain = _remote_chain(ul, ul.local_log_start)
    ul.remote = [rc for rc, _seg in chain]
    ul.segments = [seg for _rc, seg in chain] + local
    return ul


def _readable(ul: UnifiedLog) -> list[tuple[RemoteCopy, dict | None]]:
    """(remote copy, metadata entry) of each copy in the bucket Kafka would read, by base offset."""
    if ul.metadata is None or not any(rs.segment_id for rs in ul.bucket):
        return [(rs, None) for rs in ul.bucket]   # no metadata, or a raw layout no metadata names
    done = {e["segmentId"]: e for e in ul.metadata if e["state"] == FINISHED}
    return [(rs, done[rs.segment_id]) for rs in ul.bucket if rs.segment_id is not None and rs.segment_id in done]


def _remote_chain(ul: UnifiedLog, local_start: int | None) -> list[tuple[RemoteCopy, Segment]]:
    """(remote copy, the segment read of it) of the remote copies read below ``local_start``: each
    past the previous one's end, its metadata entry (when one lists it) set on it."""
    chain: list[tuple[RemoteCopy, Segment]] = []
    end = -1
    for rs, entry in _readable(ul):
        base = rs.base_offset
        if base <= end or (local_start is not None and base >= local_start):
            continue
        try:
            seg = rs.segment()
            last = entry["endOffset"] if entry is not None else seg.read_next_offset() - 1
            if local_start is not None and last >= local_start:
                seg = capped(seg, local_start)
        except KafkaFormatError as e:
            ul.unreadable.append(e.problem)   # not read: its offsets are missing from the unified log
            continue
        rs.metadata, rs.end_offset = entry, last
        chain.append((rs, seg))
        end = last
    return chain


def capped(seg: Segment, offset: int) -> Segment:
    """The segment read only up to its first batch at or past ``offset`` (the local log holds the rest)."""
    stop = None
    for b in seg.batches():
        if b.base_offset >= offset:
            stop = b.position
            break
    if stop is None:
        return seg
    return replace(seg, source=_Capped(seg.source, seg.log, stop))


class _Capped:
    """A segment's byte source cut at ``stop`` bytes of its ``.log`` (its indexes as they are)."""

    def __init__(self, source, log: str, stop: int):
        self.source, self.log, self.stop = source, log, stop

    def _end(self, name: str, end: int | None) -> int | None:
        if name != self.log:
            return end
        return self.stop if end is None else min(end, self.stop)

    def size(self, name: str) -> int:
        """The file's size (the ``.log`` cut)."""
        n = self.source.size(name)
        return min(n, self.stop) if name == self.log else n

    def read_all(self, name: str) -> bytes | None:
        """A whole file (the ``.log`` cut)."""
        data = self.source.read_all(name)
        return data[:self.stop] if data is not None and name == self.log else data

    @contextmanager
    def reader(self, name: str):
        """``read(position, n)``, never past the cut."""
        with self.source.reader(name) as read:
            cut = self._end(name, None)
            yield (read if cut is None else
                   (lambda position, n: read(position, max(0, min(n, cut - position)))))

    @contextmanager
    def range(self, name: str, start: int, end: int | None, small: int = 0):
        """(buffer, shift, first, stop) of ``[start, end)``, never past the cut."""
        with self.source.range(name, start, self._end(name, end), small) as got:
            yield got

    @contextmanager
    def mapped(self, name: str):
        """The whole file as one buffer (the ``.log`` cut)."""
        with self.source.mapped(name) as buf:
            yield buf[:self.stop] if name == self.log else buf


def unify_all(parts, tier: RemoteTier | None) -> list[Partition]:
    """Each partition of ``parts`` as its unified :class:`Partition` over ``tier`` (None: as given)."""
    if tier is None:
        return list(parts)
    return [unify(pd, tier).partition() for pd in parts]
