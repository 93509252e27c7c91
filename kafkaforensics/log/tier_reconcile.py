"""Reconciling a partition's two tiers (issue 55 item 3): the bucket's objects, the
``__remote_log_metadata`` entries and the local log checked against each other by Kafka's rules.

The facts (apache/kafka RemoteLogManager, RemoteLogMetadataCache):

* a segment is read only once its metadata reaches COPY_SEGMENT_FINISHED; a copy that fails is
  cleaned up by deleting its objects, so objects without that state are a failed copy's orphans (or
  objects a deletion left);
* ``RLMExpirationTask.cleanupExpiredRemoteLogSegments`` deletes, oldest first, the segments whose
  largest timestamp is at or below ``now - retention.ms``, and while the partition's size
  (remote segments + the local segments not yet copied, ``onlyLocalLogSegmentsSize``: base offset at
  or past the highest copied offset) exceeds ``retention.bytes``, each segment the breach still
  covers whole; it stops at the first segment it keeps;
* KAFKA-20732: on a fresh leader the expiration task can run while the highest copied offset is
  still -1, so the whole local log is counted beside the remote copies of the same offsets; the size
  seems doubled and segments inside retention are deleted;
* the remote segments' leader epochs are the leader-epoch cache's own entries at copy time.

Each check returns :class:`~kafkaforensics.errors.Problem` s (kind ``tier-...``): the file is the
object or metadata record concerned, the detail the evidence; what to do about each is ``TIER_REMEDIES`` in
:mod:`kafkaforensics.inspect.remedies`."""
from __future__ import annotations

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.log_config import LogConfig
from kafkaforensics.log.unified_log import FINISHED, UnifiedLog, unify

DELETED = ("DELETE_SEGMENT_STARTED", "DELETE_SEGMENT_FINISHED")

def reconcile(ul: UnifiedLog, retention_ms: int | None = None, retention_bytes: int | None = None,
              now: int = 0) -> list[Problem]:
    """Every reconciliation problem of the unified partition ``ul`` (``retention_ms``/``retention_bytes``
    the topic's, None or -1: unlimited; ``now`` in epoch ms)."""
    if ul.foreign_topic_id is not None:
        return [_foreign(ul)]
    out = list(ul.unreadable) + _incarnations(ul) + _orphans(ul) + _missing(ul) + _gaps(ul)
    out += _expired(ul, retention_ms, retention_bytes, now)
    out += _deleted_in_retention(ul, retention_ms, retention_bytes, now)
    out += _epoch_mismatch(ul)
    return out


def _name(ul: UnifiedLog) -> str:
    return f"{ul.local.topic}-{ul.local.partition}"


def _foreign(ul: UnifiedLog) -> Problem:
    own = (ul.local.partition_metadata() or {}).get("topicId")
    first = ul.objects[0].key if ul.objects else None
    return Problem(ul.local.path, None, None, "tier-topic-id-mismatch",
                   f"the bucket's objects of {_name(ul)} carry topic id {ul.foreign_topic_id} ({len(ul.objects)} "
                   f"object(s), e.g. {first}), partition.metadata says {own}: a cluster restored beside its old "
                   "bucket (or a recreated topic); they are not read as this partition's remote tier")


def _incarnations(ul: UnifiedLog) -> list[Problem]:
    """Objects of the partition under another topic id beside the partition's own (an earlier
    incarnation of the topic whose remote data was never deleted, or an old bucket restored into)."""
    own = (ul.local.partition_metadata() or {}).get("topicId")
    return [Problem(_uri(ul, objs[0].key) if objs else ul.local.path, None, None, "tier-topic-id-mismatch",
                    f"{_name(ul)}: {len(objs)} object(s) under topic id {tid} (e.g. {objs[0].key if objs else '-'}) "
                    f"beside the partition's own, {own} (partition.metadata): another incarnation of the topic; "
                    "they are not read as this partition's remote tier")
            for tid, objs in sorted(ul.other_incarnations.items())]


def _object_ids(ul: UnifiedLog) -> dict[str, list]:
    """segment id -> the bucket's objects of that segment (the plugin's layout; {} for the raw one)."""
    ids: dict[str, list] = {}
    for o in ul.objects:
        sid = getattr(o, "segment_id", None)
        if sid is not None:
            ids.setdefault(sid, []).append(o)
    return ids


def _uri(ul: UnifiedLog, key: str) -> str:
    rs = ul.bucket[0] if ul.bucket else None
    return rs.tier.store.uri(key) if rs is not None else key


def _where(e: dict, which: str = "stateRecord") -> dict:
    """The ``__remote_log_metadata`` record that set the entry's state (``which``), else the one that added it."""
    return e.get(which) or e.get("record") or {}


def _record(e: dict, which: str = "stateRecord") -> str:
    """That record as evidence: its file and offset."""
    r = _where(e, which)
    return f"{r.get('file')} offset {r.get('offset')}"


def _record_file(e: dict, which: str = "stateRecord") -> str | None:
    """The file of that record (a problem's file)."""
    return _where(e, which).get("file")


def _orphans(ul: UnifiedLog) -> list[Problem]:
    """Objects whose segment has no COPY_SEGMENT_FINISHED metadata (metadata known, plugin layout)."""
    if ul.metadata is None:
        return []
    states = {e["segmentId"]: e for e in ul.metadata}
    out = []
    for sid, objs in sorted(_object_ids(ul).items(), key=lambda kv: kv[1][0].base_offset):
        e = states.get(sid)
        if e is not None and e["state"] == FINISHED:
            continue
        why = ("no __remote_log_metadata record names it" if e is None else
               f"its metadata stops at {e['state']} ({_record(e)})")
        what = "a failed or unfinished copy's orphans" if e is None or e["state"] not in DELETED else \
            "left by a deletion"
        keys = ", ".join(sorted(o.key for o in objs))
        out.append(Problem(_uri(ul, objs[0].key), None, objs[0].base_offset, "tier-orphan-object",
                           f"{_name(ul)} segment {sid} at offset {objs[0].base_offset}: objects {keys} but {why}: "
                           f"{what}"))
    return out


def _missing(ul: UnifiedLog) -> list[Problem]:
    """COPY_SEGMENT_FINISHED segments whose objects the bucket lacks (plugin layout: .log,
    .indexes and .rsm-manifest each), in a tier holding the topic (a URI naming another topic's
    prefix says nothing of this one)."""
    if ul.metadata is None or not ul.holds_topic:
        return []
    ids = _object_ids(ul)
    out = []
    for e in ul.metadata:
        if e["state"] != FINISHED:
            continue
        have = {getattr(o, "suffix", None) for o in ids.get(e["segmentId"], [])}
        lacking = [s for s in ("log", "indexes", "rsm-manifest") if s not in have]
        if lacking:
            out.append(Problem(_record_file(e), None, e["startOffset"],
                               "tier-missing-object",
                               f"{_name(ul)} segment {e['segmentId']} (offsets {e['startOffset']}.."
                               f"{e['endOffset']}) is COPY_SEGMENT_FINISHED ({_record(e)}) but the bucket has no "
                               f"{', '.join('.' + s for s in lacking)} object of it"))
    return out


def _spans(ul: UnifiedLog) -> list[tuple[int, int, str, str | None]]:
    """(start, end, what, object) of every segment Kafka reads from the tier, by start offset."""
    if ul.metadata is not None and any(rs.segment_id for rs in ul.bucket):
        return sorted((e["startOffset"], e["endOffset"], f"segment {e['segmentId']}", None)
                      for e in ul.metadata if e["state"] == FINISHED)
    out = []
    for rs in ul.bucket:
        try:
            end = rs.segment().read_next_offset() - 1
        except KafkaFormatError:
            continue
        out.append((rs.base_offset, end, f"object {rs.key}", rs.key))
    return sorted(out)


def _gaps(ul: UnifiedLog) -> list[Problem]:
    """Offsets between remote segments, or between the last one and the local log start, that
    neither tier holds; remote segments holding the same offsets."""
    spans, out = _spans(ul), []
    for (s0, e0, w0, _k0), (s1, e1, w1, k1) in zip(spans, spans[1:]):
        if s1 > e0 + 1:
            out.append(Problem(_uri(ul, k1) if k1 else ul.local.path, None, e0 + 1, "tier-gap",
                               f"{_name(ul)}: remote {w0} ends at {e0}, the next, {w1}, starts at {s1}: offsets "
                               f"{e0 + 1}..{s1 - 1} are in neither tier"))
        elif s1 <= e0:
            out.append(Problem(_uri(ul, k1) if k1 else ul.local.path, None, s1, "tier-overlap",
                               f"{_name(ul)}: remote {w1} (offsets {s1}..{e1}) overlaps {w0} (offsets {s0}..{e0})"))
    local = ul.local_log_start
    if spans and local is not None:
        end = max(e for _s, e, _w, _k in spans)
        if local > end + 1:
            out.append(Problem(ul.local.path, None, end + 1, "tier-gap",
                               f"{_name(ul)}: the remote segments end at {end} but the local log starts at {local}: "
                               f"offsets {end + 1}..{local - 1} are in neither tier"))
    return out


def _size(e: dict) -> int:
    return int(e.get("sizeInBytes") or 0)


def _local_sizes(ul: UnifiedLog, highest_remote: int) -> tuple[int, int]:
    """(onlyLocalLogSegmentsSize for ``highest_remote``, the whole local log's size)."""
    sizes = [(s.base_offset, s.size) for s in ul.local.segments]
    return sum(n for b, n in sizes if b >= highest_remote), sum(n for _b, n in sizes)


def retention_deletes(entries: list[dict], retention_ms: int | None, retention_bytes: int | None, now: int,
                      only_local: int) -> list[tuple[dict, str]]:
    """RemoteLogRetentionHandler over ``entries`` (oldest first): the (entry, why) it deletes, up to
    the first it keeps."""
    until = now - retention_ms if retention_ms is not None and retention_ms >= 0 else None
    total = sum(_size(e) for e in entries) + only_local
    breach = total - retention_bytes if retention_bytes is not None and retention_bytes >= 0 else 0
    out = []
    for e in entries:
        if until is not None and e["maxTimestampMs"] <= until:
            breach = max(0, breach - _size(e))
            out.append((e, f"its largest timestamp {e['maxTimestampMs']} is at or below now - retention.ms = {until}"))
        elif breach > 0 and breach - _size(e) >= 0:
            breach -= _size(e)
            out.append((e, f"the partition's {total} bytes exceed retention.bytes={retention_bytes}"))
        else:
            break
    return out


def _expired(ul: UnifiedLog, retention_ms, retention_bytes, now: int) -> list[Problem]:
    """COPY_SEGMENT_FINISHED segments Kafka's retention deletes, still listed and present."""
    if ul.metadata is None:
        return []
    live = sorted((e for e in ul.metadata if e["state"] == FINISHED), key=lambda e: e["startOffset"])
    highest = max((e["endOffset"] for e in live), default=-1)
    only_local, _whole = _local_sizes(ul, highest)
    ids = _object_ids(ul)
    out = []
    for e, why in retention_deletes(live, retention_ms, retention_bytes, now, only_local):
        if e["segmentId"] not in ids and ids:
            continue   # its objects are already gone (tier-missing-object says so)
        out.append(Problem(_record_file(e), None, e["startOffset"], "tier-retention-expired",
                           f"{_name(ul)} segment {e['segmentId']} (offsets {e['startOffset']}..{e['endOffset']}, "
                           f"{_size(e)} bytes) is past the topic's retention and still present: {why}"))
    return out


def _deleted_in_retention(ul: UnifiedLog, retention_ms, retention_bytes, now: int) -> list[Problem]:
    """Deleted segments that neither retention (as Kafka computes it) nor the leader-epoch lineage
    explains; when counting the whole local log beside the remote copies does, KAFKA-20732's signature."""
    if ul.metadata is None:
        return []
    every = sorted((e for e in ul.metadata if e["state"] in DELETED + (FINISHED,)), key=lambda e: e["startOffset"])
    highest = max((e["endOffset"] for e in every), default=-1)
    only_local, whole = _local_sizes(ul, highest)
    right = {id(e) for e, _w in retention_deletes(every, retention_ms, retention_bytes, now, only_local)}
    buggy = {id(e) for e, _w in retention_deletes(every, retention_ms, retention_bytes, now, whole)}
    first_epoch = _first_local_epoch(ul)
    out = []
    for e in every:
        if e["state"] not in DELETED or id(e) in right:
            continue
        if first_epoch is not None and e["leaderEpochs"] and all(ep < first_epoch for ep, _o in e["leaderEpochs"]):
            continue   # deleted as unreferenced: outside the current leader-epoch lineage
        total = sum(_size(x) for x in every)
        sign = (f"the signature of KAFKA-20732: counted with the whole local log ({whole} bytes) beside the remote "
                f"copies of the same offsets the partition seems {total + whole} bytes, over retention.bytes="
                f"{retention_bytes}; counted right ({total} remote + {only_local} local-only) it is not"
                if id(e) in buggy else
                "no retention rule deletes it (a DeleteRecords below it, or a deletion outside Kafka?)")
        out.append(Problem(_record_file(e), None, e["startOffset"], "tier-deleted-in-retention",
                           f"{_name(ul)} segment {e['segmentId']} (offsets {e['startOffset']}..{e['endOffset']}, "
                           f"largest timestamp {e['maxTimestampMs']}) was deleted ({e['state']}, {_record(e)}) "
                           f"inside the topic's retention: {sign}"))
    return out


def _local_epochs(ul: UnifiedLog) -> LeaderEpochCache | None:
    try:
        return LeaderEpochCache.read(ul.local.path)
    except KafkaFormatError:
        return None


def _first_local_epoch(ul: UnifiedLog) -> int | None:
    cache = _local_epochs(ul)
    return cache.entries[0][0] if cache else None


def _remote_epochs(ul: UnifiedLog) -> list[tuple[str, str | None, list]]:
    """(what, file, [(epoch, start offset)]) of each remote segment read: the metadata's epochs, else
    the leader-epoch index uploaded with the segment."""
    out = []
    for rc, seg in ul.remote_reads():
        if rc.metadata is not None:
            out.append((f"segment {rc.metadata['segmentId']}", _record_file(rc.metadata, "record"),
                        [tuple(x) for x in rc.metadata["leaderEpochs"]]))
            continue
        try:
            epochs = rc.leader_epochs()
        except KafkaFormatError:
            continue
        out.append((f"object {rc.key}", seg.log, epochs))
    return out


def _epoch_mismatch(ul: UnifiedLog) -> list[Problem]:
    """Remote segments whose leader epochs disagree with the local ``leader-epoch-checkpoint``: an
    epoch starting at another offset, or one the local chain does not have inside its span."""
    cache = _local_epochs(ul)
    if not cache:
        return []
    local = dict(cache.entries)
    first_epoch, first_start = cache.entries[0]
    out = []
    for what, file, epochs in _remote_epochs(ul):
        diffs = []
        for i, (ep, start) in enumerate(epochs):
            have = local.get(ep)
            if have is None and ep > first_epoch:
                diffs.append(f"epoch {ep} (from {start}) is not in the local chain")
            elif have is None or have == start or (ep == first_epoch and have > start):
                continue   # the local chain truncated from its start holds the epoch from later on
            elif not (i == 0 and have < start and cache.epoch_for_offset(start) == ep):
                # a segment's first entry starts at its base offset (epochEntriesInRange truncates from it)
                diffs.append(f"epoch {ep} starts at {start}, locally at {have}")
        if diffs:
            out.append(Problem(file, None, epochs[0][1] if epochs else None, "tier-epoch-mismatch",
                               f"{_name(ul)} remote {what}: " + "; ".join(diffs) +
                               f" (leader-epoch-checkpoint: {cache.entries})"))
    return out


def check_partition(pd, tier, now: int | None = None) -> tuple[UnifiedLog, list[Problem]]:
    """The partition dir ``pd`` (a :class:`~.partition.Partition`) over ``tier``, and its
    reconciliation problems under the topic's retention (``LogConfig.of``: retention.ms and
    retention.bytes, which Kafka's remote retention applies to the whole log; local.retention.*
    only govern the local copies).  ``now`` (epoch ms) None: the partition's own clock, its newest
    timestamp (a copy examined long after the broker stopped is not judged by today's date)."""
    ul = unify(pd, tier)
    cfg = LogConfig.of(pd.path)
    clock = now if now is not None else log_clock(ul)
    return ul, reconcile(ul, cfg.get_int("retention.ms"), cfg.get_int("retention.bytes"), clock)


def log_clock(ul: UnifiedLog) -> int:
    """The newest timestamp the partition shows: its local time indexes' last entries and the
    remote segments' largest timestamps (0 when none)."""
    newest = [e["maxTimestampMs"] for e in ul.metadata or []]
    for seg in ul.local.segments:
        try:
            entries = seg.time_index()
        except (KafkaFormatError, OSError):
            continue
        if entries:
            newest.append(entries[-1][0])
    return max(newest, default=0)
