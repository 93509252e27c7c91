"""``kfx recover --plan-space LOG_DIR...``: a disk-full rescue plan. It writes nothing, not even a backup.

For each log dir:

* **needed**: the bytes Kafka's start-up would write there, taken from the plan ``kfx recover --dry-run``
  computes (:func:`~.load_logs.recover_log_dirs`), each action with its size as Kafka writes it --

  - an index of the ACTIVE segment (the last one kept): LogLoader.load ends with
    ``resizeIndexes(segment.index.bytes)``, so its ``.index`` and ``.timeindex`` grow to
    ``segment.index.bytes`` (10 MiB by default) rounded down to a multiple of the entry size (8 and
    12 bytes: AbstractIndex.resize), whether rebuilt, created or already there;
  - an index of a rolled segment rebuilt (missing or corrupt): LogSegment.recover trims it to its
    entries (``trimToValidSize``), the size the plan writes; while the segment is recovered both its
    indexes are first reset to ``segment.index.bytes`` (AbstractIndex.reset), a peak counted once
    (``num.recovery.threads.per.data.dir`` defaults to 1) as ``transient``;
  - producer snapshots written; the leader-epoch checkpoint and the log dir's
    ``recovery-point-offset-checkpoint``, ``log-start-offset-checkpoint`` and
    ``replication-offset-checkpoint``, which Kafka writes through a ``.tmp`` file renamed over the
    old one (the new file whole, while the old one is still there);
  - a new empty active segment for a log without segments (its indexes preallocated as above);
    a swap's or cleaned file's completion is a rename or a deletion: no bytes.

  Bytes the start-up frees (leftovers deleted, tails truncated) are listed but not credited:
  the plan stays on the safe side of the order Kafka frees and writes them in.
* **free**: ``f_bavail * f_frsize`` of ``os.statvfs`` (what a broker not running as root may use); log dirs
  given together on one filesystem share it, each judged by what they need together.
* **segments that could be moved** elsewhere: whole segments of live topic partitions (never the active
  one, never the metadata log) that are both below every consumer group's committed offset for that
  partition (:func:`~kafkaforensics.inspect.groups.committed_offsets`; a partition no group committed
  for offers none) and past the topic's retention as ``kfx retention`` judges it
  (:func:`~.retention.retention` in a dry run, with the topic's effective ``retention.ms`` and
  ``retention.bytes``, :class:`~kafkaforensics.log.log_config.LogConfig`; by time and size only under
  ``cleanup.policy`` delete). When start-up does not fit, :attr:`SpacePlan.moves` is the shortest list of
  them, oldest first (each partition's in offset order), that frees the shortfall, with the ``mv``
  commands to move them (printed, never run).
"""
from __future__ import annotations

import os
import time
from dataclasses import dataclass, field

from specs import checkpoints as C

from kafkaforensics.log.log_config import BROKER_DEFAULTS, LogConfig
from kafkaforensics.log.partition import METADATA_PARTITION, LogDir, parse_partition_dir_name, partition_dir_state
from kafkaforensics.log.segment import INDEX_KINDS, LOG, SEGMENT_SUFFIXES, file_name, offset_from_name
from kafkaforensics.log.load_plan import LoadOptions
from kafkaforensics.repair.load_logs import LogDirRecovery, recover_log_dirs
from kafkaforensics.repair.retention import retention

#: the entry size of each index preallocated (AbstractIndex.resize rounds down to a multiple of it)
ENTRY_BYTES = {k.suffix: k.entry_size for k in INDEX_KINDS if k.preallocated}
#: the log dir's checkpoints a starting broker writes through a .tmp file and a rename
LOG_DIR_CHECKPOINTS = (LogDir.RECOVERY_POINT, LogDir.LOG_START_OFFSET, LogDir.REPLICATION_OFFSET)


@dataclass
class Need:
    """Bytes one file of start-up takes more than it does now."""
    file: str
    bytes: int
    why: str

    def to_json(self) -> dict:
        return {"file": self.file, "bytes": self.bytes, "why": self.why}


@dataclass
class Movable:
    """A whole segment that could be moved off the log dir: its files and their bytes."""
    partition: str
    base_offset: int
    next_offset: int
    largest_timestamp: int
    committed: int
    reason: str
    files: list[tuple[str, int]]

    @property
    def bytes(self) -> int:
        return sum(size for _f, size in self.files)

    def to_json(self) -> dict:
        return {"partition": self.partition, "segment": file_name(self.base_offset, LOG),
                "baseOffset": self.base_offset, "nextOffset": self.next_offset,
                "largestTimestamp": self.largest_timestamp, "lowestCommittedOffset": self.committed,
                "retention": self.reason, "bytes": self.bytes,
                "files": [{"file": f, "bytes": size} for f, size in self.files]}


@dataclass
class SpacePlan:
    """What start-up needs on one log dir, what is free, and what could be moved to make room."""
    log_dir: str
    free: int
    needs: list[Need] = field(default_factory=list)
    transient: int = 0
    freed: int = 0
    candidates: list[Movable] = field(default_factory=list)
    moves: list[Movable] = field(default_factory=list)
    move_to: str | None = None
    notes: list[str] = field(default_factory=list)
    #: what every log dir given on this one's filesystem needs together (None: it is alone there)
    shared_need: int | None = None
    device: int | None = field(default=None, repr=False)

    @property
    def needed(self) -> int:
        return sum(n.bytes for n in self.needs) + self.transient

    @property
    def fits(self) -> bool:
        return self.free >= (self.shared_need or self.needed)

    @property
    def shortfall(self) -> int:
        return max(0, (self.shared_need or self.needed) - self.free)

    def commands(self) -> list[str]:
        """The shell commands that would move :attr:`moves` (printed for the user, never run here)."""
        dest = self.move_to or "DEST"
        out: list[str] = []
        by_partition: dict[str, list[str]] = {}
        for m in self.moves:
            by_partition.setdefault(m.partition, []).extend(f for f, _s in m.files)
        for part, files in by_partition.items():
            target = os.path.join(dest, part)
            out.append(f"mkdir -p {_quote(target)} && mv {' '.join(_quote(f) for f in files)} {_quote(target)}/")
        return out

    def to_json(self) -> dict:
        moved = sum(m.bytes for m in self.moves)
        return {"logDir": self.log_dir, "neededBytes": self.needed, "transientBytes": self.transient,
                "freeBytes": self.free, "sharedNeededBytes": self.shared_need, "fits": self.fits, "shortfallBytes": self.shortfall,
                "freedByStartupBytes": self.freed, "needs": [n.to_json() for n in self.needs],
                "candidates": [m.to_json() for m in self.candidates],
                "moves": [m.to_json() for m in self.moves], "moveBytes": moved,
                "enough": moved >= self.shortfall, "moveTo": self.move_to, "commands": self.commands(),
                "notes": self.notes, "dryRun": True}


def _quote(path: str) -> str:
    """``path`` quoted for a POSIX shell where it needs it."""
    if path and all(c.isalnum() or c in "/._-+=:@%," for c in path):
        return path
    return "'" + path.replace("'", "'\\''") + "'"


def _size(path: str) -> int:
    try:
        return os.path.getsize(path)
    except OSError:
        return 0


def free_bytes(path: str) -> int:
    """The bytes a non-root process may still write on the filesystem of ``path`` (os.statvfs)."""
    st = os.statvfs(path)
    return st.f_bavail * st.f_frsize


def index_max_bytes(partition_dir: str) -> int:
    """The topic's ``segment.index.bytes`` (its effective config; Kafka's default 10 MiB)."""
    return LogConfig.of(partition_dir).get_int("segment.index.bytes") or int(BROKER_DEFAULTS["segment.index.bytes"][0])


def _preallocated(max_bytes: int, suffix: str) -> int:
    """AbstractIndex.resize: the size rounded down to a multiple of the index's entry size."""
    return max_bytes - max_bytes % ENTRY_BYTES[suffix]


def partition_needs(rep) -> tuple[list[Need], int, int]:
    """(the needs, the transient peak, the bytes freed) of one partition's recovery plan ``rep``."""
    if rep.active_segment is None:  # a -delete dir: Kafka loads it only to delete it
        return [], 0, 0
    max_bytes = index_max_bytes(rep.path)
    active = {file_name(rep.active_segment, s): s for s in ENTRY_BYTES}
    renamed = {a.target: a.file for a in rep.actions if a.action == "rename"}
    needs, freed, written, gone = [], 0, set(), set()
    for a in rep.actions:  # in the plan's order: a file deleted before it is written again starts from 0 bytes
        name = os.path.basename(a.file)
        if a.action in ("delete", "truncate"):
            freed += _size(a.file) - (a.size or 0)
            if a.action == "delete":
                gone.add(a.file)
            continue
        if a.action != "write":
            continue
        written.add(name)
        old = 0 if name == C.LEADER_EPOCH_FILE or a.file in gone else _size(renamed.get(a.file, a.file))
        if name in active:
            new, why = _preallocated(max_bytes, active[name]), f"active segment's index, {a.detail}, preallocated " \
                f"to segment.index.bytes={max_bytes} (LogLoader: resizeIndexes)"
        else:
            new, why = len(a.data or b""), a.detail + (" (through a .tmp file)" if name == C.LEADER_EPOCH_FILE else "")
        if new > old:
            needs.append(Need(a.file, new - old, why))
    for name, suffix in active.items():
        path = os.path.join(rep.path, name)
        if name not in written and _preallocated(max_bytes, suffix) > _size(renamed.get(path, path)):
            needs.append(Need(path, _preallocated(max_bytes, suffix) - _size(renamed.get(path, path)),
                              f"active segment's index preallocated to segment.index.bytes={max_bytes} "
                              "(LogLoader: resizeIndexes)"))
    rolled = [n for n in rep.recovered_segments if offset_from_name(n) != rep.active_segment]
    transient = sum(_preallocated(max_bytes, s) for s in ENTRY_BYTES) if rolled else 0
    return needs, transient, freed


def log_dir_needs(out: LogDirRecovery) -> tuple[list[Need], int, int]:
    """(needs, transient peak, freed) of a whole log dir: its partitions' and its checkpoints'."""
    needs, peak, freed = [], 0, 0
    for rep in out.partitions:
        n, t, f = partition_needs(rep)
        needs += n
        peak, freed = max(peak, t), freed + f
    planned = {os.path.basename(a.file): a for a in out.checkpoint_actions}
    for name in LOG_DIR_CHECKPOINTS:
        path = os.path.join(out.log_dir, name)
        data = planned[name].data if name in planned else None  # a planned checkpoint is a write
        size = len(data) if data is not None else _size(path)
        if size:
            needs.append(Need(path, size, "log dir checkpoint Kafka rewrites at start through a .tmp file "
                              "renamed over it (both exist at once)"))
    return needs, peak, freed


def _lowest_commits(log_dir: str, committed) -> dict:
    """(topic, partition) -> the lowest offset any group committed for it (``committed``: the log dir's
    commits, as :func:`~kafkaforensics.inspect.groups.committed_offsets` lists them)."""
    low: dict = {}
    for r in committed([log_dir]):
        tp = (r["topic"], r["partition"])
        low[tp] = min(low.get(tp, r["offset"]), r["offset"])
    return low


def _retention_limits(partition_dir: str, notes: set) -> dict:
    """The topic's retention.ms and retention.bytes as Kafka applies them (None: unlimited or not by
    time and size), the notes naming where each came from added to ``notes``."""
    cfg = LogConfig.of(partition_dir)
    got, said = cfg.settle({"retention.ms": None, "retention.bytes": None})
    if not cfg.deletes:
        notes.add(f"{cfg.topic}: {cfg.describe('cleanup.policy')}: retention by time and size does not apply "
                  "(only the log start offset)")
        return {"retention.ms": None, "retention.bytes": None}
    notes.update(said)
    for name in got:
        if name not in cfg.noted and name in cfg.values:
            notes.add(f"{cfg.topic}: {cfg.describe(name)}: the log dir holds no {name} for it (a broker's "
                      "server.properties may set another)")
    return {k: v if v is not None and v >= 0 else None for k, v in got.items()}


def movable_segments(out: LogDirRecovery, now: int | None, notes: set, committed) -> list[Movable]:
    """Every segment of the log dir below every group's commit and past its topic's retention."""
    low = _lowest_commits(out.log_dir, committed)
    found, uncommitted = [], []
    for rep in out.partitions:
        path = rep.path
        tp = parse_partition_dir_name(path) if path is not None else None
        if (path is None or tp is None or rep.partition == METADATA_PARTITION or partition_dir_state(path) != "live"
                or rep.active_segment is None):
            continue
        if tp not in low:
            uncommitted.append(rep.partition)
            continue
        limits = _retention_limits(path, notes)
        ret = retention(path, retention_ms=limits["retention.ms"], retention_bytes=limits["retention.bytes"],
                        now=now, dry_run=True)
        for d in ret.deleted:
            if d["baseOffset"] >= rep.active_segment or d["nextOffset"] > low[tp]:
                break
            files = [(p, _size(p)) for p in (os.path.join(path, file_name(d["baseOffset"], s))
                                             for s in SEGMENT_SUFFIXES) if os.path.exists(p)]
            found.append(Movable(rep.partition, d["baseOffset"], d["nextOffset"], d["largestTimestamp"], low[tp],
                                 d["reason"], files))
    if uncommitted:
        notes.add(f"{len(uncommitted)} partition(s) that no group committed an offset for offer no segment to move: "
                  + ", ".join(sorted(uncommitted)[:5]) + (", ..." if len(uncommitted) > 5 else ""))
    return found


def oldest_first(candidates: list[Movable]) -> list[Movable]:
    """The candidates oldest first by largest timestamp, each partition's kept in offset order (a
    segment's age is the newest of its own and its partition's earlier ones)."""
    keyed: list[tuple[tuple[int, str, int], Movable]] = []
    newest: dict[str, int] = {}  # partition -> the largest timestamp of its segments so far
    for m in sorted(candidates, key=lambda m: (m.partition, m.base_offset)):
        newest[m.partition] = max(newest.get(m.partition, m.largest_timestamp), m.largest_timestamp)
        keyed.append(((newest[m.partition], m.partition, m.base_offset), m))
    return [m for _k, m in sorted(keyed, key=lambda x: x[0])]


def choose_moves(candidates: list[Movable], shortfall: int) -> list[Movable]:
    """The shortest oldest-first run of ``candidates`` whose bytes cover ``shortfall`` (all of them
    when even they do not)."""
    moves, total = [], 0
    for m in oldest_first(candidates):
        if total >= shortfall:
            break
        moves.append(m)
        total += m.bytes
    return moves


def plan_space(log_dirs, committed, *, move_to: str | None = None, now: int | None = None,
               kafka_version=None, full: bool = False) -> list[SpacePlan]:
    """A :class:`SpacePlan` a log dir (see the module's doc). Reads only: nothing is written.
    ``committed``: a function listing the commits of log dirs, as
    :func:`~kafkaforensics.inspect.groups.committed_offsets` (an inspect stage's, given by the caller).
    ``now`` (epoch ms): the clock retention and producer expiry are judged by (default: now for
    retention; no producer expires, as ``kfx recover``); ``full``: every segment validated, as
    ``kfx recover --full``."""
    plans = []
    load = LoadOptions(kafka_version=kafka_version, now=now, full=full)
    for out in recover_log_dirs(list(log_dirs), load, jobs=1, dry_run=True, backup=False):
        needs, transient, freed = log_dir_needs(out)
        plan = SpacePlan(out.log_dir, free_bytes(out.log_dir), needs, transient, freed, move_to=move_to)
        notes: set = set()
        clock = int(time.time() * 1000) if now is None else now
        plan.candidates = oldest_first(movable_segments(out, clock, notes, committed))
        plan.notes = sorted(notes)
        plan.device = os.stat(out.log_dir).st_dev
        if any("resizeIndexes" in n.why for n in needs):
            plan.notes.append("the active segments' indexes are counted at their preallocated size; most Linux "
                              "filesystems (ext4, xfs) keep them sparse, taking blocks as entries are written")
        plans.append(plan)
    _share_filesystems(plans)
    for plan in plans:
        plan.moves = choose_moves(plan.candidates, plan.shortfall) if not plan.fits else []
    return plans


def _share_filesystems(plans: list[SpacePlan]) -> None:
    """Log dirs on one filesystem share its free bytes: each is judged by what they need together."""
    by_device: dict = {}
    for plan in plans:
        by_device.setdefault(plan.device, []).append(plan)
    for group in by_device.values():
        if len(group) < 2:
            continue
        total = sum(p.needed for p in group)
        for plan in group:
            plan.shared_need = total
            others = ", ".join(p.log_dir for p in group if p is not plan)
            plan.notes.append(f"shares its filesystem with {others}: together they need {total} bytes")
