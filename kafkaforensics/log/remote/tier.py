"""A remote tier (KIP-405): one bucket/prefix or directory of segment objects, in the layout of
Aiven's tiered-storage plugin (``aiven``) or as plain copies of a partition dir's files (``raw``),
read as :class:`~kafkaforensics.log.segment.Segment` objects every existing reader walks unchanged."""
from __future__ import annotations

import posixpath
import re
from typing import NamedTuple

from specs import checkpoints as C

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote import aiven
from kafkaforensics.log.remote.keys import load_keys, unwrap
from kafkaforensics.log.remote.source import ChunkedObjectFiles, StoreFiles
from kafkaforensics.log.remote.store import RemoteTierError, Store
from kafkaforensics.log.segment import INDEX, LOCAL_FILES, LOG, SEGMENT_FILE_RE, SNAPSHOT, TIMEINDEX, TXNINDEX, \
    Segment, offset_of_file_name

#: the file an uploader of the raw layout leaves beside a partition's segments: the offset copied up to
WATERMARK_FILE = "offset.wm"
_PARTITION_DIR_RE = re.compile(r"^(?P<topic>.+)-(?P<partition>\d+)$")


class RawKey(NamedTuple):
    """One object of the raw layout: a partition-dir file under ``topic/partition/`` or ``topic-partition/``."""
    key: str
    topic: str
    partition: int
    base_offset: int | None
    name: str


def _raw_key(key: str) -> RawKey | None:
    """The partition of a raw-layout object (None when its directory names none)."""
    parts = key.split("/")
    if len(parts) >= 3 and parts[-2].isdigit():
        return RawKey(key, parts[-3], int(parts[-2]), offset_of_file_name(parts[-1]), parts[-1])
    m = _PARTITION_DIR_RE.match(parts[-2]) if len(parts) >= 2 else None
    if m:
        return RawKey(key, m["topic"], int(m["partition"]), offset_of_file_name(parts[-1]), parts[-1])
    return None


class RemoteCopy:
    """The copy of one segment RemoteLogManager made in the tier (no segment of its own: its
    :meth:`segment` is the :class:`Segment` reading the original bytes): where its objects live, what
    its manifest says (the plugin's layout), and, once a unified log reads it, the
    ``__remote_log_metadata`` entry that lists it (Kafka's RemoteLogSegmentMetadata)."""

    def __init__(self, tier: "RemoteTier", obj: "aiven.ObjectKey | RawKey", files: dict | None = None):
        """``obj``: the ``.log`` object's parsed key; ``files``: the raw layout's suffix -> key."""
        self.tier, self.topic, self.partition, self.key = tier, obj.topic, obj.partition, obj.key
        self.base_offset: int = obj.base_offset or 0
        self.topic_id: str | None = obj.topic_id if isinstance(obj, aiven.ObjectKey) else None
        self.segment_id: str | None = obj.segment_id if isinstance(obj, aiven.ObjectKey) else None
        self._stem = obj.stem if isinstance(obj, aiven.ObjectKey) else None   # the plugin's keys' shared stem
        self._files = files or {}   # raw: suffix -> key
        self._manifest: aiven.Manifest | None = None
        #: once a unified log reads the copy: the ``__remote_log_metadata`` entry that lists it (None:
        #: none does) and the last offset it holds (the entry's ``endOffset``, else its last batch's)
        self.metadata: dict | None = None
        self.end_offset: int | None = None

    def __repr__(self) -> str:
        return f"RemoteCopy({self.topic}-{self.partition}@{self.base_offset}, {self.key})"

    @property
    def uri(self) -> str:
        """The ``.log`` object's full name (``s3://bucket/prefix/key``, or its path in a dir)."""
        return self.tier.store.uri(self.key)

    @property
    def manifest_key(self) -> str | None:
        """The ``.rsm-manifest`` object's key (None in the raw layout)."""
        return f"{self._stem}.{aiven.MANIFEST_SUFFIX}" if self._stem is not None else None

    @property
    def indexes_key(self) -> str | None:
        """The ``.indexes`` object's key (None in the raw layout)."""
        return f"{self._stem}.{aiven.INDEXES_SUFFIX}" if self._stem is not None else None

    def parsed_manifest(self) -> aiven.Manifest | None:
        """The manifest, read once (None in the raw layout); a damaged or missing one is a
        ``remote-manifest`` :class:`KafkaFormatError` naming its key."""
        if self._stem is None:
            return None
        if self._manifest is None:
            key = self.manifest_key or ""
            try:
                self._manifest = aiven.parse_manifest(self.tier.store.read(key))
            except KafkaFormatError as e:
                raise e.located(file=self.tier.store.uri(key)) from None
        return self._manifest

    @property
    def manifest(self) -> dict | None:
        """The parsed ``.rsm-manifest`` JSON (None in the raw layout)."""
        m = self.parsed_manifest()
        return m.raw if m is not None else None

    def data_key(self) -> bytes | None:
        """The segment's AES data key, unwrapped with the operator's key file (None: not encrypted)."""
        m = self.parsed_manifest()
        if m is None or m.wrapped_key is None:
            return None
        try:
            return unwrap(self.tier.keys, m.key_id or "", m.wrapped_key)
        except KafkaFormatError as e:
            raise e.located(file=self.tier.store.uri(self.manifest_key or "")) from None

    def _chunked(self) -> ChunkedObjectFiles:
        m = self.parsed_manifest()
        assert m is not None
        return ChunkedObjectFiles(self.tier.store, self.key, self.indexes_key or "", m, self.data_key())

    def segment(self) -> Segment:
        """The segment as Kafka's LogSegment: its ``.log`` bytes (decoded) and offset, time and
        transaction indexes, read through its byte source."""
        store = self.tier.store
        if self._stem is not None:
            src = self._chunked()
            names = src.index_names
            named = {s: names[k] for s, k in ((INDEX, "offset"), (TIMEINDEX, "time"), (TXNINDEX, "transaction"))
                     if k in names}
            return Segment(self.base_offset, posixpath.dirname(src.log), file=src.log, source=src,
                           named=named)
        local = not store.scheme
        named = {s: store.uri(k) for s, k in self._files.items() if s != LOG}
        return Segment(self.base_offset, posixpath.dirname(store.uri(self.key)), file=store.uri(self.key),
                       source=LOCAL_FILES if local else StoreFiles(store), named=named)

    def leader_epochs(self) -> list[tuple[int, int]]:
        """The leader-epoch index the plugin keeps in ``.indexes`` as (epoch, start offset) ([] in the raw layout)."""
        if self._stem is None:
            return []
        data = self._chunked().read_index("leader-epoch")
        if not data:
            return []
        where = f"{self.tier.store.uri(self.indexes_key or '')}#leader-epoch"
        rows = C.LeaderEpochCheckpoint.parse(data.decode("utf-8", "replace"), file=where) or []
        return [(r["epoch"], r["startOffset"]) for r in rows]

    def producer_snapshot(self) -> bytes | None:
        """The producer-state snapshot uploaded with the segment (None when there is none)."""
        if self._stem is not None:
            return self._chunked().read_index("producer-snapshot") or None
        key = self._files.get(SNAPSHOT)
        return self.tier.store.read(key) if key else None


class RemoteTier:
    """One bucket/prefix (or dir) of segment objects: its layout (``aiven`` or ``raw``), its partitions,
    each partition's segments sorted by base offset, and every object seen (orphan checks)."""

    def __init__(self, store: Store, layout: str, objects: dict, keys: dict):
        self.store, self.layout, self._objects, self.keys = store, layout, objects, keys
        self.uri = store.uri_root

    @classmethod
    def open(cls, uri: str, key_files: dict[str, str] | None = None) -> "RemoteTier":
        """The tier at ``uri`` (a dir, ``file://...``, ``s3://bucket/prefix``), listed once; ``key_files``:
        key id -> PEM file of the RSA private key that unwraps data keys.  A missing dir/bucket/prefix,
        one holding no segment objects, or an unreadable key file is a one-line :class:`RemoteTierError`."""
        keys = load_keys(key_files)
        store = Store(uri)
        listed = store.list()
        plugin: dict = {}
        for key, _size in listed:
            k = aiven.parse_key(key)
            if k is not None:
                plugin.setdefault((k.topic, k.partition), []).append(k)
        if plugin:
            return cls(store, "aiven", plugin, keys)
        raw: dict = {}
        for key, _size in listed:
            r = _raw_key(key)
            if r is not None:
                raw.setdefault((r.topic, r.partition), []).append(r)
        if not any(r.name.endswith(LOG) and r.base_offset is not None for rs in raw.values() for r in rs):
            raise RemoteTierError(f"{store.uri_root}: no segment objects (neither the tiered-storage plugin's "
                                  f"layout nor topic/partition copies of segments)", file=store.uri_root)
        return cls(store, "raw", raw, keys)

    def partitions(self) -> list[tuple[str, int]]:
        """(topic, partition) of every partition with objects, sorted."""
        return sorted(self._objects)

    def objects(self, topic: str, partition: int, topic_id: str | None = None) -> list:
        """Every object of the partition, parsed (:class:`~.aiven.ObjectKey` or :class:`RawKey`), by key;
        ``topic_id``: only that incarnation's (the plugin's layout)."""
        objs = self._objects.get((topic, partition), [])
        return sorted(o for o in objs if topic_id is None or getattr(o, "topic_id", None) == topic_id)

    def topic_ids(self, topic: str) -> list[str]:
        """Every topic id the keys give ``topic``, sorted (more than one: the topic was deleted and made
        again, or a cluster restored beside its old bucket)."""
        return sorted({o.topic_id for (t, _p), objs in self._objects.items() if t == topic
                       for o in objs if isinstance(o, aiven.ObjectKey)})

    def topic_id(self, topic: str) -> str | None:
        """The topic id the object keys carry (the plugin's layout; None otherwise or when no object names it)."""
        for (t, _p), objs in sorted(self._objects.items()):
            if t == topic:
                return next((o.topic_id for o in objs if isinstance(o, aiven.ObjectKey)), None)
        return None

    def segments(self, topic: str, partition: int, topic_id: str | None = None) -> list[RemoteCopy]:
        """The partition's segments (each one with a ``.log`` object), sorted by base offset;
        ``topic_id``: only that incarnation's (the plugin's layout; every one by default)."""
        objs = self.objects(topic, partition, topic_id)
        if self.layout == "aiven":
            return sorted((RemoteCopy(self, o) for o in objs if o.suffix == aiven.LOG_SUFFIX),
                          key=lambda s: (s.base_offset, s.key))
        by_base: dict = {}
        log_keys: dict = {}
        for o in objs:
            m = SEGMENT_FILE_RE.match(o.name)
            if m is not None and not m.group(3):   # a leftover (.deleted, .swap ...) is no segment file
                by_base.setdefault(o.base_offset, {})[m.group(2)] = o.key
                if m.group(2) == LOG:
                    log_keys[o.base_offset] = o
        return [RemoteCopy(self, log_keys[base], files=files) for base, files in sorted(by_base.items())
                if base in log_keys]

    def watermark(self, topic: str, partition: int) -> int | None:
        """The raw layout's ``offset.wm``: the offset the uploader says it copied up to (None: none, or unreadable)."""
        for o in self._objects.get((topic, partition), []):
            if isinstance(o, RawKey) and o.name == WATERMARK_FILE:
                try:
                    return int(self.store.read(o.key).split()[0])
                except (KafkaFormatError, ValueError, IndexError):
                    return None
        return None
