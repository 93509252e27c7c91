"""The remote tier (KIP-405 tiered storage) as scan input: a bucket of segment objects a tiered
broker's plugin wrote (:class:`~kafkaforensics.log.remote.RemoteTier`), read by the ``kafka_segments``
source and ``kfx scan`` beside local log dirs (source options ``remote``: tier URIs, comma-separated;
``remoteKeyFiles``: ``ID=PEM`` pairs, comma-separated, the private keys of an encrypted tier).

Each partition of a tier is one more entry of a scan's listing: its "partition dir" (``partitionDir``)
the object prefix, ``/`` ending it (``<topic>-<topicId>/<partition>/``: never the ``topic-N`` of a
live replica, which the replica view and the races compare, and a tier is none), its log dir the
tier's URI, its segments the remote
segments (base offset, the ``.log`` object's URI, the original segment's size).  The source's
:class:`~kafkaforensics.spark.storage.Storage` hands a remote segment's URI here for its
:class:`~kafkaforensics.log.segment.Segment`, whose byte source maps the original segment's byte
ranges onto the object's chunks (decompressed, decrypted) and whose ``.index``/``.timeindex`` are
the manifest's ranges of the ``.indexes`` object: the same pruning, splits and reads as a local
segment, done where the split is read (a Spark task), never in the driver.
"""
from __future__ import annotations

import posixpath

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.remote import RemoteCopy, RemoteTier
from kafkaforensics.log.remote.aiven import parse_key
from kafkaforensics.log.remote.keys import load_keys
from kafkaforensics.log.remote.store import Store
from kafkaforensics.log.remote.tier import RawKey
from kafkaforensics.log.segment import LOG, SEGMENT_SUFFIXES, offset_from_name

#: the source options this module reads
REMOTE_OPTIONS = ("remote", "remoteKeyFiles")
#: the ``tier`` column's values
LOCAL, REMOTE = "local", "remote"


def key_files(text: str | None) -> dict[str, str]:
    """``ID=PEM,ID=PEM`` (the ``remoteKeyFiles`` option, ``--key-file``'s) as {key id: PEM path};
    ValueError, one line, for a pair without ``=``."""
    out = {}
    for pair in (text or "").split(","):
        if not pair:
            continue
        kid, sep, path = pair.partition("=")
        if not sep or not kid or not path:
            raise ValueError(f"--key-file takes ID=PEM (the key id a manifest names, the private key file), not {pair!r}")
        out[kid] = path
    return out


def tier_roots(text: str | None) -> list[str]:
    """The tiers of the ``remote`` option (comma-separated), each as its objects' URIs start
    (:class:`~kafkaforensics.log.remote.store.Store`'s root: a local dir's absolute path)."""
    return [Store(u).uri_root for u in (text or "").split(",") if u]


class RemoteInputs:
    """The remote tiers of one read, from its options; holds only them (it pickles to Spark's
    workers, where a segment is opened from its URI alone: no listing of the tier there)."""

    def __init__(self, options: dict | None = None):
        options = options or {}
        self.roots = tier_roots(options.get("remote"))
        self.keys = key_files(options.get("remoteKeyFiles"))
        self._tiers: dict = {}

    def __getstate__(self):
        return {"roots": self.roots, "keys": self.keys}

    def __setstate__(self, state):
        self.__dict__.update(state, _tiers={})

    def __bool__(self) -> bool:
        return bool(self.roots)

    def add_to(self, lay, source_of) -> None:
        """Every tier's partitions added to the listing ``lay`` (a :class:`~.scan_plan.Layout`), its
        tiers opened (listed) here, once: ``source_of(log_dir, topic, partition, dir_name)`` makes a
        partition's :class:`~.scan_plan.Source`.  A segment whose manifest cannot be read is an
        anomaly of its partition (``lay.lost``: kind, offset, detail), not a failed scan.  Raises
        ValueError (one line) for a tier that cannot be opened.""" 
        for root in self.roots:
            try:
                tier = RemoteTier.open(root, self.keys)
            except KafkaFormatError as e:  # no such dir, bucket or prefix; no segment in it; a bad key file
                raise ValueError(f"remote tier {e.problem.detail}") from None
            self._tiers[root] = tier
            for topic, partition in tier.partitions():
                segs = tier.segments(topic, partition)
                if not segs:
                    continue
                prefix = posixpath.dirname(segs[0].key) + "/"
                d = posixpath.join(root, prefix)
                lay.partitions[d] = source_of(root, topic, partition, prefix)
                lay.segments[d] = []
                for rs in segs:
                    uri = tier.store.uri(rs.key)
                    try:
                        lay.segments[d].append((rs.base_offset, uri, rs.segment().size))
                    except KafkaFormatError as e:  # a damaged or missing manifest, a wrong key
                        lay.lost.setdefault(d, []).append((e.problem.file or uri, rs.base_offset, e.kind,
                                                           e.problem.detail))
                lay.segments[d].sort()

    def owns(self, uri: str) -> bool:
        """Whether ``uri`` is an object of these tiers."""
        return any(uri.startswith(r + "/") for r in self.roots)

    def _bare(self, root: str) -> RemoteTier:
        """The tier at ``root`` with no listing (a worker's: it opens segments by their keys)."""
        if root not in self._tiers:
            store = Store(root)
            self._tiers[root] = RemoteTier(store, "aiven", {}, load_keys(self.keys))
        return self._tiers[root]

    def segment(self, uri: str):
        """The :class:`~kafkaforensics.log.segment.Segment` of the remote segment whose ``.log``
        object is ``uri``: the plugin's (its manifest read here) or a raw layout's copy."""
        root = next(r for r in self.roots if uri.startswith(r + "/"))
        tier, key = self._bare(root), uri[len(root) + 1:]
        k = parse_key(key)
        if k is not None:
            rs = RemoteCopy(tier, k)
        else:
            stem = key[:-len(LOG)]
            rs = RemoteCopy(tier, RawKey(key, "", -1, offset_from_name(key), posixpath.basename(key)),
                               files={s: stem + s for s in SEGMENT_SUFFIXES})
        return rs.segment()
