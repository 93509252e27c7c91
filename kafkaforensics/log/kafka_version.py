"""Which Kafka generation wrote a log dir, as a range of feature releases [low, high).

Told (``--kafka-version X.Y``, which overrides) or inferred from what the log dir's files say, each
fact a bound (Kafka source in brackets):

* a KRaft broker's ``RegisterBrokerRecord`` (metadata log, snapshot, bootstrap) advertises the highest
  ``metadata.version`` its software supports: that release exactly; a finalized ``metadata.version``
  (``FeatureLevelRecord``) is a lower bound [MetadataVersion];
* ``meta.properties``: v1 (``node.id``) is KRaft, 2.8+; v1 without ``directory.id`` is before 3.7 (3.7's
  KRaft start-up gives every log dir one, KIP-858); v0 without ``cluster.id`` is before 2.4 (2.4 writes
  it) [BrokerMetadataCheckpoint]; a v0 log dir without ``__cluster_metadata`` is ZooKeeper mode, before 4.0;
* ``partition.metadata`` (topic ids, KIP-516) is written from 2.8: present, 2.8+ (absent says nothing:
  an inter.broker.protocol.version below 2.8 writes none);
* ``.kafka_cleanshutdown``: JSON ``{"version", "brokerEpoch"}`` from 3.7 (KAFKA-15582), empty before;
* ``leader-epoch-checkpoint`` (KIP-101) and producer snapshots are 0.11+ (absent says nothing: from 2.2
  the epoch file is deleted on the old message format);
* batch formats: magic 2 is 0.11+, magic 1 is 0.10+ (older segments stay as they were written, so
  magic 0/1 is no upper bound);
* index contents (the first entries of a sample of segments): an offset-index entry holding the base
  offset of a batch of several records is 1.1 or older, a later offset of it 2.0+ (KAFKA-6264); a
  time-index entry naming a record inside an uncompressed batch is a 3.6-or-older leader's.

:func:`kafka_version` gives the range with the facts it rests on; its :meth:`KafkaVersion.rules`
is the :mod:`.kafka_rules` table for that range.  Without any fact the range is open and kfx
applies the newest rules (what it always did); so it does for a directory without ``meta.properties``
(not a broker's log dir: a partition kfx wrote, a copy), whose missing files say nothing.
"""
from __future__ import annotations

import os
import re
import struct
from dataclasses import dataclass, field

from specs import checkpoints as C

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.kafka_rules import (NEWEST, OLDEST, RELEASES, AppliedRules, Version, next_release,
                                            release_of, version_text)
from kafkaforensics.log.partition import METADATA_PARTITION, LogDir
from kafkaforensics.log.segment import INDEX, LOG, SNAPSHOT, TIMEINDEX, BatchScanner, offset_from_name, open_buffer, sibling
from kafkaforensics.log import kraft, offset_index, time_index
from kafkaforensics.records.batch import parse_header
from kafkaforensics.records.internal_topics import decode_metadata

#: metadata.version feature level -> its release (MetadataVersion: IBP_3_0_IV1 = 1 ... IBP_4_5_IV0 = 34)
METADATA_LEVELS = {1: (3, 0), 2: (3, 1), 3: (3, 2), 4: (3, 3), 5: (3, 3), 6: (3, 3), 7: (3, 3), 8: (3, 4),
                   9: (3, 5), 10: (3, 5), 11: (3, 5), 12: (3, 6), 13: (3, 6), 14: (3, 6), 15: (3, 7),
                   16: (3, 7), 17: (3, 7), 18: (3, 7), 19: (3, 7), 20: (3, 8), 21: (3, 9), 22: (4, 0),
                   23: (4, 0), 24: (4, 0), 25: (4, 0), 26: (4, 1), 27: (4, 1), 28: (4, 2), 29: (4, 2),
                   30: (4, 3), 31: (4, 4), 32: (4, 4), 33: (4, 4), 34: (4, 5)}

#: what a damaged file can raise while a fact is read from it (the fact is then not known)
_UNREADABLE = (OSError, KafkaFormatError, ValueError, IndexError, KeyError, TypeError, struct.error)

_PARTITION_DIR = re.compile(r"^.+-\d+$")
_VERSION = re.compile(r"^(\d+)\.(\d+)(?:\.\d+)*$")


@dataclass
class KafkaVersion:
    low: Version = OLDEST
    high: Version | None = None          # exclusive; None: no upper bound
    evidence: list = field(default_factory=list)
    told: bool = False

    @property
    def known(self) -> bool:
        return self.told or bool(self.evidence)

    def rules(self) -> AppliedRules:
        """The rules of the versions in the range; with nothing known, the newest release's."""
        if not self.known:
            return AppliedRules(NEWEST, None)
        return AppliedRules(self.low, self.high)

    def contains(self, v: Version) -> bool:
        v = tuple(v)
        return tuple(self.low) <= v and (self.high is None or v < tuple(self.high))

    def label(self) -> str:
        if not self.known:
            return f"unknown (newest rules, {version_text(NEWEST)}+)"
        if self.high is not None and next_release(self.low) == tuple(self.high):
            return version_text(self.low)
        lo = f"≥{version_text(self.low)}" if tuple(self.low) != OLDEST else ""
        hi = f"<{version_text(self.high)}" if self.high is not None else ""
        return ", ".join(x for x in (lo, hi) if x) or "any"

    def line(self) -> str:
        """One line for text output: the range, how it is known, the rules it selects."""
        how = "told" if self.told else ("; ".join(self.evidence) if self.evidence else "no evidence in the files")
        r = self.rules()
        chosen = ", ".join(f"{a}={r.write(a)}" for a in ("offset-index-entry", "time-index-offset",
                                                          "index-entries-per", "leftover-swap"))
        return f"Kafka {self.label()} ({how}); rules: {chosen}"

    def to_json(self) -> dict:
        return {"range": self.label(), "low": version_text(self.low),
                "high": None if self.high is None else version_text(self.high),
                "told": self.told, "evidence": list(self.evidence), "rules": self.rules().summary()}

    # -- narrowing -------------------------------------------------------------------------------
    def at_least(self, v: Version, why: str) -> None:
        if tuple(v) > tuple(self.low):
            self.low = tuple(v)
        self.evidence.append(why)

    def below(self, v: Version, why: str) -> None:
        if self.high is None or tuple(v) < tuple(self.high):
            self.high = tuple(v)
        self.evidence.append(why)


def parse_kafka_version(text: str) -> KafkaVersion:
    """``X.Y`` or ``X.Y.Z`` (the feature release counts) as a told version; ValueError otherwise."""
    m = _VERSION.match(text.strip())
    if not m:
        raise ValueError(f"--kafka-version {text!r}: expected a release such as 3.6 or 2.8.1")
    v = release_of(tuple(int(x) for x in text.strip().split(".")))
    if v is None:
        raise ValueError(f"--kafka-version {text}: not a Kafka release kfx knows "
                         f"({version_text(RELEASES[0])} to {version_text(NEWEST)})")
    return KafkaVersion(v, next_release(v), [f"told {text}"], told=True)


def find_log_dir(path: str) -> str:
    """The log dir a segment file, partition dir or log dir belongs to."""
    path = os.path.abspath(path)
    if os.path.isfile(path):
        path = os.path.dirname(path)
    if os.path.exists(LogDir(path).meta_properties_file) or not _PARTITION_DIR.match(os.path.basename(path)):
        return path
    return os.path.dirname(path)


def kafka_version(path: str, told: str | KafkaVersion | None = None) -> KafkaVersion:
    """The version told (a string or a :class:`KafkaVersion`), else the one inferred for the log dir
    of ``path``."""
    if isinstance(told, KafkaVersion):
        return told
    if told:
        return parse_kafka_version(told)
    return infer_kafka_version(find_log_dir(path))


#: partition dirs only a broker from this release on makes: a replica moving between log dirs (-future,
#: KIP-113, 1.1) and one the controller no longer assigns here (-stray, KIP-858, 3.7)
_SUFFIX_SINCE = {"future": ((1, 1), "a -future dir (KIP-113, 1.1)"), "stray": ((3, 7), "a -stray dir (KIP-858, 3.7)")}
_SUFFIXED_DIR = re.compile(r"^.+-\d+\.[0-9a-f]{32}-(future|stray)$")


def _suffix_dirs(names, kv: KafkaVersion) -> None:
    """What a version writes proves it: a ``-future`` or ``-stray`` partition dir."""
    for state in sorted({m.group(1) for m in map(_SUFFIXED_DIR.match, names) if m}):
        kv.at_least(*_SUFFIX_SINCE[state])


def infer_kafka_version(log_dir: str) -> KafkaVersion:
    """The range of Kafka releases whose files the log dir holds (see the module's doc)."""
    kv = KafkaVersion()
    try:
        names = sorted(os.listdir(log_dir))
    except OSError:
        return kv
    parts = [n for n in names if _PARTITION_DIR.match(n) and os.path.isdir(os.path.join(log_dir, n))]
    kraft = METADATA_PARTITION in parts
    ld = LogDir(log_dir)
    try:
        meta = ld.meta_properties()
    except (KafkaFormatError, OSError):
        meta = {}
    if meta is None:
        return kv   # not a broker's log dir (a partition written by kfx, a copy): nothing to infer from
    if meta:
        if meta["version"] == 1:
            kraft = True
            kv.at_least((2, 8), "meta.properties v1 (KRaft)")
            if meta["directoryId"] is None:
                kv.below((3, 7), "meta.properties v1 without directory.id")
        elif not meta["clusterId"]:
            kv.below((2, 4), "meta.properties v0 without cluster.id")
        else:
            kv.at_least((2, 4), "meta.properties v0 with cluster.id")
        if meta["directoryId"] is not None:
            kv.at_least((3, 7), "meta.properties directory.id")
        if meta["version"] == 0 and not kraft:
            kv.below((4, 0), "ZooKeeper mode (meta.properties v0, no __cluster_metadata)")
    if kraft:
        kv.at_least((2, 8), "KRaft mode")
        _metadata_versions(log_dir, kv)
    _clean_shutdown(ld, kv)
    _suffix_dirs(names, kv)
    if parts:
        data_parts = [p for p in parts if p != METADATA_PARTITION]
        files = {p: _listdir(os.path.join(log_dir, p)) for p in data_parts}
        # only what a version writes proves it: a missing partition.metadata (an inter.broker.protocol
        # below 2.8) or leader-epoch-checkpoint (deleted from 2.2 on the old message format) says nothing
        if any(C.PARTITION_METADATA_FILE in f for f in files.values()):
            kv.at_least((2, 8), "partition.metadata present")
        if any(C.LEADER_EPOCH_FILE in f for f in files.values()):
            kv.at_least((0, 11), "leader-epoch-checkpoint present")
        if any(n.endswith(TIMEINDEX) for f in files.values() for n in f):
            kv.at_least((0, 10, 1), "time indexes present (KIP-33, 0.10.1)")
        if any(n.endswith(SNAPSHOT) for f in files.values() for n in f):
            kv.at_least((0, 11), "producer snapshots present")
        _index_styles(log_dir, files, kv)
        magics = _first_magics(log_dir, files)
        if 2 in magics:
            kv.at_least((0, 11), "record batches v2")
        elif 1 in magics:
            kv.at_least((0, 10), "message format v1")
    if kv.high is not None and tuple(kv.low) >= tuple(kv.high):
        kv.evidence.append("the facts disagree (an upgraded or mixed log dir): the newest of them counts")
        kv.high = next_release(kv.low)
    return kv


def _listdir(path: str) -> list[str]:
    try:
        return os.listdir(path)
    except OSError:
        return []


#: how many segments' first index entries :func:`_index_styles` looks at
INDEX_SAMPLE = 200


def _index_styles(log_dir: str, files: dict, kv: KafkaVersion) -> None:
    """Bounds from what index entries hold (sampled: the first entry of up to INDEX_SAMPLE
    segments): an offset-index entry naming the base offset of a batch of several records is 1.1 or
    older, one naming a later offset of it 2.0+ (KAFKA-6264); a time-index entry naming a record
    inside an uncompressed batch, not its last, was written by a 3.6 or older leader."""
    seen = 0
    found = set()
    for p, names in files.items():
        for n in names:
            if not n.endswith(INDEX) or seen >= INDEX_SAMPLE:
                continue
            base = offset_from_name(n)
            stem = os.path.join(log_dir, p, n[:-len(INDEX)])
            if base is None or not os.path.exists(stem + LOG):
                continue
            seen += 1
            try:
                with open(stem + INDEX, "rb") as f:
                    head = f.read(8)
                with open(stem + TIMEINDEX, "rb") as f:
                    thead = f.read(12)
                with open_buffer(stem + LOG) as buf:
                    if len(head) == 8:
                        for off, pos in offset_index.read_entries(head, base)[0]:  # its one entry, if any
                            if not 0 < pos < len(buf) - 17:
                                continue
                            b = parse_header(buf, pos)
                            if b.magic >= 2 and b.last_offset > b.base_offset:
                                if off == b.base_offset:
                                    found.add("base")
                                elif off > b.base_offset:
                                    found.add("last")
                    if len(thead) == 12:
                        for _ts, toff in time_index.read_entries(thead, base)[0]:  # its one entry, if any
                            if _record_inside_batch(buf, base, toff):
                                found.add("record")
            except _UNREADABLE:
                continue
    if "base" in found and "last" not in found:
        kv.below((2, 0), "offset-index entries hold batch base offsets")
    elif "last" in found:
        kv.at_least((2, 0), "offset-index entries hold batch last offsets")
    if "record" in found:
        kv.below((3, 7), "time-index entries name records inside uncompressed batches")


def _record_inside_batch(buf, base: int, offset: int) -> bool:
    """Whether ``offset`` lies inside, and is not the last of, an uncompressed v2 batch."""
    for b in BatchScanner(buf, base_offset=base):
        if b.last_offset >= offset:
            return b.magic >= 2 and b.compression == 0 and b.base_offset <= offset < b.last_offset
    return False


def _first_magics(log_dir: str, files: dict) -> set[int]:
    """The magic byte of the first batch of every non-empty segment."""
    out = set()
    for p, names in files.items():
        for n in names:
            if not n.endswith(LOG):
                continue
            try:
                with open(os.path.join(log_dir, p, n), "rb") as f:
                    head = f.read(17)
            except OSError:
                continue
            if len(head) == 17:
                out.add(head[16])
    return out


def _clean_shutdown(ld: LogDir, kv: KafkaVersion) -> None:
    try:
        marker = ld.clean_shutdown_marker(strict=True)
    except KafkaFormatError:
        return
    if marker is None:
        return
    if marker["format"] != "empty":
        kv.at_least((3, 7), "clean-shutdown file as JSON")
    else:
        kv.below((3, 7), "empty clean-shutdown file")


def _index_position(log: str, base: int, offset: int) -> int:
    """Where the batch holding ``offset`` starts at the latest, by the segment's offset index (0
    without a readable one)."""
    try:
        with open(sibling(log, INDEX), "rb") as f:
            entries, _zero = offset_index.read_entries(f.read(), base)
        pos = offset_index.lookup(entries, offset, base)[1]
        return pos if 0 <= pos < os.path.getsize(log) else 0
    except _UNREADABLE:
        return 0


def _metadata_versions(log_dir: str, kv: KafkaVersion) -> None:
    """Bounds from the KRaft metadata: the newest RegisterBrokerRecord's supported metadata.version
    (the software's release) and the highest finalized metadata.version."""
    found: dict[str, int | None] = {"supported": None, "finalized": None}

    def scan(path, start=0):
        try:
            with open_buffer(path) as buf:
                for b in BatchScanner(buf, file=path, start=start):
                    if b.is_control or b.magic < 2 or not b.crc_valid():
                        continue
                    for r in b.records():
                        v = r.value
                        if v is None or len(v) < 3 or v[1] not in (0, 12):  # RegisterBroker, FeatureLevel
                            continue
                        try:
                            d = decode_metadata(bytes(v))
                        except _UNREADABLE:
                            continue
                        data = d.get("data") or {}
                        if d.get("type") == "FeatureLevelRecord" and data.get("Name") == "metadata.version":
                            found["finalized"] = max(found["finalized"] or 0, data.get("FeatureLevel") or 0)
                        elif d.get("type") == "RegisterBrokerRecord":
                            for feat in data.get("Features") or []:
                                if feat.get("Name") == "metadata.version":
                                    found["supported"] = feat.get("MaxSupportedVersion")
        except _UNREADABLE:   # damage is verify's to report; here a fact is only missing
            pass

    boot = os.path.join(log_dir, kraft.BOOTSTRAP_FILE)
    if os.path.exists(boot):
        scan(boot)
    mdir = os.path.join(log_dir, METADATA_PARTITION)
    names = sorted(_listdir(mdir))
    snaps = sorted(n for n in names if kraft.SNAPSHOT_RE.match(n))
    end = 0
    if snaps:  # the newest snapshot holds every registration and feature level up to its end offset
        scan(os.path.join(mdir, snaps[-1]))
        newest = kraft.snapshot_id(snaps[-1])
        end = newest[0] if newest else 0  # never None: snaps are the names SNAPSHOT_RE matches
    # then the log from there on: from the last segment starting at or below it, at its index entry
    logs = sorted((base, n) for n in names if n.endswith(LOG) and (base := offset_from_name(n)) is not None)
    first = max([i for i, (base, _n) in enumerate(logs) if base <= end] or [0])
    for i, (base, n) in enumerate(logs[first:]):
        scan(os.path.join(mdir, n), _index_position(os.path.join(mdir, n), base, end) if i == 0 else 0)
    level = found["finalized"]
    if level is not None and level in METADATA_LEVELS:
        kv.at_least(METADATA_LEVELS[level], f"metadata.version {level} finalized")
    sup = found["supported"]
    if sup is not None and sup in METADATA_LEVELS:
        rel = METADATA_LEVELS[sup]
        kv.at_least(rel, f"broker supports metadata.version up to {sup} ({version_text(rel)})")
        nxt = next_release(rel)
        if nxt is not None:
            kv.high = nxt if kv.high is None else min(tuple(kv.high), nxt)
