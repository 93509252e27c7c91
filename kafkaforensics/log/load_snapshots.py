"""The producer-snapshot pass of a load (:class:`SnapshotPlan`): the snapshots Kafka's LogLoader leaves,
by ProducerStateManager's and UnifiedLog.rebuildProducerState's rules, planned over the snapshot
offsets on disk (:mod:`.log_loader` runs it as ``rebuild_producer_state``)."""
from __future__ import annotations

from kafkaforensics import fsutil
from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log import kafka_files
from kafkaforensics.log.kafka_rules import EXPIRY_DEFAULT_MS
from kafkaforensics.log.load_plan import PHASES, Action, PlanFiles
from kafkaforensics.log.producer_state import read_snapshot, snapshot_bytes
from kafkaforensics.log.segment import LOG, SNAPSHOT, Segment, file_name

_EMPTY = None  # a snapshot Kafka writes without producer state (see SnapshotPlan)


class SnapshotPlan:
    """The producer snapshots Kafka's loading leaves, by its rules (ProducerStateManager with
    UnifiedLog.rebuildProducerState), played over the snapshot offsets on disk:

    * each segment recovered (at load for its index, then the unflushed ones) gets a fresh state
      manager: snapshots above its base or at or below the checkpointed log start go, the latest
      one left is loaded, the state is rebuilt up to the base (a snapshot at the last two segments'
      bases and at the base itself, each only past the last snapshot), the segment is recovered and
      a snapshot taken at the end of its last v2 batch, only past the last snapshot
      (:meth:`recoveries`);
    * snapshots of removed segments go; then removeStraySnapshots (segment bases and only the
      latest stray one past the last base stay) (:meth:`remove_stray_snapshots`);
    * the log's own manager (:meth:`log_manager`): after a clean shutdown with no snapshot left it
      writes empty ones at the last two segment bases and the log end (past 0); otherwise snapshots
      past the log end or at or below the log start go and the state is rebuilt from the latest one to
      the log end, with a snapshot at the last two segment bases met and at the log end, each only past
      the last one.

    Snapshots are taken only past the last one (takeSnapshot), so an empty partition gets none.
    A snapshot is written only when no file at its offset holds the same entries (Kafka writes its
    entries in hash-map order, so the order of entries is not compared); a corrupt one is deleted.
    Producer expiry: with ``now`` given, from 2.4 producers last seen below the log start are left out of
    the snapshots written once expired at ``now`` (ProducerStateManager.isProducerExpired, by the
    version's default expiry: the producer-expiry rule); producers at or above the log start are not
    expired (their state is rebuilt from the batches, which Kafka's load does not expire).

    Where generations differ (``rules``): strays are removed from 2.8 on only; up to 2.3 producers last
    seen below the log start are evicted from the state written; a snapshot holding what that
    generation keeps (:func:`~kafkaforensics.log.kafka_files.snapshot_kept`) is not rewritten; a log on
    the old message format (magic 0/1) gets empty snapshots at the last two segment bases and the log
    end and is not truncated and reloaded (UnifiedLog.rebuildProducerState)."""

    def __init__(self, loader, recoveries: list[tuple[int, list[int]]]):
        self.ld, self.d, self.plan, self.rules = loader, loader.d, loader.plan, loader.rules
        self.recovered = recoveries
        self.segments, self.leo, self.lso_ck = loader.kept, loader.leo, loader.log_start_offset
        self.snaps: set[int] = set()
        self.written: dict[int, object] = {}
        self.why: dict[int, str] = {}
        self.legacy = False
        self.log_start = max(self.lso_ck, self.segments[0]) if self.segments else self.lso_ck

    def run(self) -> None:
        """Every step, in the order Kafka's load makes them."""
        self.on_disk = self.delete_corrupt()
        self.legacy = _legacy_format(self.d, self.segments)
        if not self.legacy:
            self.recoveries()
        self.drop(set(self.snaps) & set(self.ld.removed), "producer snapshot of a removed segment")
        self.remove_stray_snapshots()
        if self.segments:
            self.log_manager()
        self.apply()

    def delete_corrupt(self) -> set[int]:
        """The snapshot offsets on disk; a corrupt snapshot is deleted."""
        for n, off in list(self.d.with_offset((SNAPSHOT,))):
            try:
                with open(self.d.files[n], "rb") as f:
                    read_snapshot(f.read(), file=self.d.files[n])
                self.snaps.add(off)
            except KafkaFormatError as e:
                self.plan.append(Action("delete", self.d.full(n), f"corrupt producer snapshot: {e.problem.detail}",
                                        phase=PHASES["snapshot"]))
                del self.d.files[n]
        return set(self.snaps)

    def drop(self, offs, reason: str) -> None:
        for s in sorted(offs):
            self.snaps.discard(s)
            self.written.pop(s, None)
            self.why.setdefault(s, reason)

    def take(self, o: int, content, last: int) -> int:
        """takeSnapshot: at ``o`` only past the ``last`` one; the last one after it."""
        if o > last:
            self.snaps.add(o)
            self.written[o] = content
            return o
        return last

    def state_at(self, o: int):
        out = _EMPTY
        for base, _nxt, st in self.ld.walked:
            if base >= o:
                break
            out = st
        return out

    def rebuild(self, bases: list[int], upto: int, log_start: int, last: int) -> int:
        """Replay from the latest snapshot ``last`` to ``upto``: snapshots at the last two bases met."""
        marks = set(bases[-2:])
        map_end = last
        floor = max([b for b in bases if b <= last], default=None)
        for b in bases:
            if b >= upto or (floor is not None and b < floor):
                continue
            start = max(b, map_end, log_start)
            map_end = start
            if b in marks:
                last = self.take(start, self.state_at(start), last)
        return self.take(upto, self.state_at(upto), last)

    def recoveries(self) -> None:
        """A fresh state manager for each segment recovered, rebuilt up to its base."""
        for base, phase_segments in self.recovered:
            self.drop({s for s in self.snaps if s > base or s <= self.lso_ck}, "producer snapshot past the segment "
                      "being recovered or at or below the log start (removed when Kafka rebuilds the state to "
                      "recover it)")
            last = max([s for s in self.snaps if s <= base], default=self.lso_ck)
            if base > last and base > 0:
                last = self.rebuild(phase_segments, base, self.lso_ck, last)
            end = self.ld.v2_end.get(base)
            if end is not None:
                self.take(end, _state_after(self.ld.walked, base), last)

    def remove_stray_snapshots(self) -> None:
        """ProducerStateManager.removeStraySnapshots (2.8+): segment bases and the latest stray one past the
        last base stay."""
        strays = sorted(s for s in self.snaps if s not in set(self.segments))
        keep = strays[-1] if strays and self.segments and strays[-1] > max(self.segments) else None
        if self.rules.write("stray-snapshots") == "remove":
            self.drop({s for s in strays if s != keep}, "stray producer snapshot with no segment at its offset")

    def log_manager(self) -> None:
        """The log's own state manager, loaded and rebuilt to the log end."""
        if self.legacy or (self.ld.clean and not self.snaps):
            self.drop(set(snapshots_past_log_end(self.snaps, self.leo)), "producer snapshot past the log end offset")
            last = max(self.snaps, default=0)
            for o in self.segments[-2:] + [self.leo]:
                last = self.take(o, _EMPTY_SNAPSHOT, last)
            return
        self.drop(set(snapshots_past_log_end(self.snaps, self.leo)) | {s for s in self.snaps if s <= self.log_start},
                  "producer snapshot past the log "
                  "end offset or at or below the log start (ProducerStateManager.truncateAndReload)")
        last = max([s for s in self.snaps if s <= self.leo], default=self.log_start)
        if self.leo > last:
            self.rebuild(self.segments, self.leo, self.log_start, last)

    def apply(self) -> None:
        """The deletes and writes that make the snapshots on disk the ones planned."""
        # the snapshot the log's state manager loads (loadFromSnapshot): its producers the batches replayed
        # past it do not touch stay in the state, those below the log start too (evicted up to 2.3 below)
        loaded = max((s for s in self.snaps & self.on_disk if s <= self.leo), default=None)
        loaded_path = self.d.files[file_name(loaded, SNAPSHOT)] if loaded is not None else None
        for s in sorted(self.on_disk - self.snaps):
            n = file_name(s, SNAPSHOT)
            self.plan.append(Action("delete", self.d.full(n), self.why.get(s, "producer snapshot Kafka removes at "
                                    "load"), phase=PHASES["snapshot"]))
            del self.d.files[n]
        for o in sorted(self.written):
            content = self.written[o]
            data = content if isinstance(content, bytes) else _EMPTY_SNAPSHOT
            if loaded is not None and loaded_path is not None and o > loaded and not self.legacy and content is not _EMPTY:
                data = _with_loaded(data, loaded_path)
            data = self.expired(data)
            n = file_name(o, SNAPSHOT)
            if n in self.d.files and (_same_snapshot(self.d.files[n], data)
                                      or kafka_files.snapshot_kept(self.d.files[n], data, self.log_start, self.rules)):
                continue
            self.plan.append(Action("write", self.d.full(n), "rebuild the producer state from the batches", data=data,
                                    phase=PHASES["snapshot"]))
            self.d.files[n] = self.d.full(n)

    def expired(self, data: bytes) -> bytes:
        """``data`` without the producers below the log start the version evicts (up to 2.3) or expires at
        ``now`` (2.4+)."""
        if data is _EMPTY_SNAPSHOT:
            return data
        if self.rules.write("producers-below-log-start") == "evict":
            return kafka_files.evict_below(data, self.log_start)
        now = self.ld.opts.now
        if now is not None:
            return kafka_files.expire_below(data, self.log_start, now,
                                            EXPIRY_DEFAULT_MS[self.rules.write("producer-expiry")])
        return data


_EMPTY_SNAPSHOT = snapshot_bytes([])


def snapshots_past_log_end(offsets, leo: int) -> list[int]:
    """The producer snapshots (their offsets) the log's state manager deletes at load as past the log end
    ``leo`` (ProducerStateManager.truncateAndReload); ``kfx verify`` reports the same ones."""
    return sorted(s for s in offsets if s > leo)


def _with_loaded(data: bytes, path: str) -> bytes:
    """``data``'s producers plus those of the snapshot Kafka loaded (``path``) that the batches replayed
    did not touch (a producer whose batches are all gone from the log lives on in the snapshot only)."""
    have = read_snapshot(data)
    ids = {e.producer_id for e in have}
    with open(path, "rb") as f:
        extra = [e for e in read_snapshot(f.read(), file=path) if e.producer_id not in ids]
    return data if not extra else snapshot_bytes(have + extra)


def _legacy_format(d: PlanFiles, segments: list[int]) -> bool:
    """Whether the newest non-empty segment starts with a magic 0/1 batch (a log on the old message
    format); an empty log counts as v2, the default format."""
    for base in sorted(segments, reverse=True):
        path = d.files.get(file_name(base, LOG))
        if path is None:   # not written yet (an empty segment the plan creates)
            continue
        try:
            head = Segment.of_file(path).read_at(0, 17)
        except (OSError, TypeError):  # not written yet
            continue
        if len(head) == 17:
            return head[16] < 2
    return False


def _state_after(walked: list, base: int):
    for b, _nxt, st in walked:
        if b == base:
            return st
    return _EMPTY_SNAPSHOT


def _same_snapshot(path: str, data: bytes) -> bool:
    """The file holds the same producer entries as ``data``, in any order (Kafka writes hash-map order)."""
    if fsutil.same_content(path, data):
        return True
    try:
        with open(path, "rb") as f:
            have = read_snapshot(f.read(), file=path)
    except (OSError, KafkaFormatError):
        return False
    want = read_snapshot(data)
    key = lambda e: e.producer_id  # noqa: E731
    return sorted(have, key=key) == sorted(want, key=key)
