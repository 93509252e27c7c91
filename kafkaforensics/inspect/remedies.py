"""What to do about each finding: one line per kind, with the real paths, topic, partition and offsets.

``kfx analyze``'s findings (:mod:`.analyzer`), ``kfx verify``'s problems and the remote tier's
(:mod:`.both_tiers`) take their remedies here, so a clean ``kfx verify`` asks a problem's remedy without
loading the analyzer.
"""
from __future__ import annotations

import os
from typing import NamedTuple, Protocol

from kafkaforensics.errors import Problem
from kafkaforensics.inspect.verify import TAIL_KINDS
from kafkaforensics.log.partition import parse_partition_dir_name
from kafkaforensics.log.segment import INDEX_SUFFIXES, LOG, offset_from_name, sibling


class Located(Protocol):
    """What a remedy is written from: the finding's kind, its file and its first offset."""
    @property
    def kind(self) -> str: ...

    @property
    def file(self) -> str | None: ...

    @property
    def first_offset(self) -> int | None: ...


class _ProblemAt(NamedTuple):
    """A verify :class:`~kafkaforensics.errors.Problem` as a :class:`Located`."""
    kind: str
    file: str | None
    first_offset: int | None


#: what to do about the two tiers disagreeing (log/tier_reconcile.py's findings), by kind
TIER_REMEDIES = {
    "tier-topic-id-mismatch": "the bucket holds an earlier incarnation of the topic (a cluster restored beside its old "
                              "bucket, or the topic deleted and recreated): Kafka never reads these objects; keep "
                              "them as evidence, point remote.log.storage at this cluster's own prefix, and delete "
                              "the old prefix only once nothing needs it",
    "tier-orphan-object": "Kafka never reads these objects (only COPY_SEGMENT_FINISHED segments are read) and will "
                          "not delete them: after keeping a copy as evidence, delete the segment's .log, .indexes "
                          "and .rsm-manifest objects from the bucket",
    "tier-missing-object": "the metadata says the segment is in the tier but its objects are gone: consumers "
                           "fetching these offsets fail; restore the objects from a bucket backup or versioning, "
                           "else the offsets are lost (kfx explain shows what else holds them)",
    "tier-gap": "these offsets are in neither tier: check a replica's local log (kfx diff) and the bucket's "
                "versioning or backups for the missing segment",
    "tier-overlap": "two copied segments hold the same offsets: Kafka reads the one whose leader epochs the "
                    "leader-epoch chain names; compare both (kfx dump) and keep the other as evidence",
    "tier-retention-expired": "Kafka's RemoteLogManager deletes it on its next expiration run: in a copy of a "
                              "stopped cluster nothing to do; on a live one check the broker logs for "
                              "RLMExpirationTask errors (remote.log.manager.task.interval.ms)",
    "tier-deleted-in-retention": "data inside the topic's retention was deleted: restore the objects from the "
                                 "bucket's versioning or backups if any; upgrade the brokers past KAFKA-20732 "
                                 "(3.9/4.0/4.1/4.2 backports, 4.3.2) before the next leader change",
    "tier-epoch-mismatch": "the remote segment was copied by a leader whose epoch lineage differs from this "
                           "replica's: compare the replicas' leader-epoch-checkpoint (kfx diff) and the broker "
                           "logs for an unclean leader election; consumers may read records the local log lost",
}

#: what to do about a remote tier's objects, by problem kind
REMOTE_REMEDIES = {
    "remote-manifest": "the broker cannot read this segment from the tier without its manifest: restore the "
                       ".rsm-manifest object (bucket versioning, a copy of the bucket); its .log and .indexes are untouched",
    "remote-chunk": "restore the .log object (bucket versioning, a copy of the bucket): consumers fetching these "
                    "offsets from the tier fail; kfx dump --remote shows the batches before the damaged chunk",
    "remote-index": "restore the .indexes object (bucket versioning, a copy of the bucket): the broker fetches this "
                    "index for the segment and fails; the .log is intact",
    "remote-key": "pass the private key of the key pair the manifests name: --key-file ID=PEM (the plugin's "
                  "encryption.key.pair.id and its private key file)",
    "remote-tier": "check that the object exists and that these credentials may read it (a failed or partly "
                   "deleted copy leaves some objects of a segment behind)",
}


_INDEX_KINDS = {"index-mismatch", "index-past-end", "index-size", "index-zero-tail", "missing-index", "missing-timeindex",
                "timeindex-mismatch", "timeindex-order", "txnindex-missing", "txnindex-mismatch", "txnindex-extra",
                "orphan-index"}


def remedy_for(f: Located, partition_dir: str, producer: tuple | None = None) -> str:
    """One line saying what to do about a finding, with the real paths, topic, partition and offsets.

    ``producer``: (producer id, epoch, coordinator epoch) of a hanging transaction, for the form of
    the abort command that brokers before 3.0 need (TransactionsCommand's abort options)."""
    k, d = f.kind, partition_dir
    tp = parse_partition_dir_name(d)
    if k in TIER_REMEDIES:
        return TIER_REMEDIES[k]
    if k in REMOTE_REMEDIES:   # an object of the remote tier that cannot be read (verify --remote's remedies)
        return REMOTE_REMEDIES[k]
    if k == "hanging-transaction":
        topic, part = tp if tp else ("TOPIC", "PARTITION")
        old = (f"; brokers before 3.0: --producer-id {producer[0]} --producer-epoch {producer[1]} "
               f"--coordinator-epoch {max(0, producer[2])} instead of --start-offset" if producer else "")
        return (f"abort it through the cluster: kafka-transactions.sh --bootstrap-server HOST:PORT abort "
                f"--topic {topic} --partition {part} --start-offset {f.first_offset} "
                f"(kfx recover cannot: the marker must come from the transaction coordinator{old})")
    if k == "missing-index":
        return (f"nothing needed: Kafka rebuilds a missing offset index when it loads the log; "
                f"kfx reindex {sibling(f.file, LOG) if f.file else d} rebuilds it now, byte-identical")
    if k in _INDEX_KINDS:
        target = f.file or d
        if k == "orphan-index":
            return f"nothing needed: Kafka's log loading deletes it; kfx recover {d} removes it now (backup kept)"
        if target.endswith(INDEX_SUFFIXES) and offset_from_name(target) is not None:
            target = sibling(target, LOG)
        return f"kfx reindex {target} (rebuilds the segment's indexes as Kafka's recovery does, with a backup)"
    if k in TAIL_KINDS:
        return (f"kfx recover --dry-run {d} shows the truncation Kafka would do at start-up; then kfx recover {d} "
                "(backup kept); kfx salvage copies out any valid batches after the damage first")
    if k == "valid-after-damage":
        return (f"kfx salvage {d} --out NEW_DIR copies them out (with everything valid) before kfx recover {d} "
                "truncates at the damage as Kafka would")
    if k == "kfx-temp":
        part = d if parse_partition_dir_name(d) is not None else "PARTITION_DIR"
        return f"kfx recover {part} removes it (any partition of the log dir does), or delete it"
    if k == "not-a-partition-dir":
        return (f"move {f.file or 'it'} out of the log dir (keep it elsewhere): a broker does not start while "
                "it is there; kfx recover leaves it alone")
    if k == "leftover-file":
        what = ("Kafka renames a .swap over the segments it replaces (an interrupted compaction or split)"
                if (f.file or "").endswith(".swap") else
                "Kafka deletes .cleaned/.deleted leftovers on start-up")
        return f"{what}: kfx recover --dry-run {d}, then kfx recover {d} does the same with a backup"
    return _history_remedy(k, d)


def _history_remedy(k: str, d: str) -> str:
    """:func:`remedy_for` of the findings about what the log holds (sequences, epochs, offsets,
    timestamps, checkpoints, metadata) rather than its files."""
    if k == "sequence-gap":
        return ("records this producer sent between those sequences are not in this replica (lost to an unclean "
                "leader election or a truncation?): compare the other replicas with kfx diff, check the broker logs "
                "for unclean elections and the producer's logs for OutOfOrderSequence errors")
    if k == "duplicate-sequence":
        return "the same producer batch was written twice: check for a retried send after a leader change; kfx diff the replicas"
    if k in ("fenced-producer-write", "epoch-regression"):
        return "a zombie producer kept writing: find the second instance with the same transactional.id"
    if k == "offset-gap":
        return f"if the topic is not compacted, compare the replicas (kfx diff {d} OTHER_REPLICA) for the missing offsets"
    if k in ("timestamp-regression", "far-future-timestamp", "pre-epoch-timestamp", "timestamp-type-mixed"):
        return "check the producing clients' clocks and the topic's message.timestamp.type; time-based lookups and retention use these"
    if k == "marker-without-data":
        return "harmless after compaction or retention; otherwise compare the replicas with kfx diff"
    if k == "aborted-transaction":
        return "nothing to do: read_committed consumers skip these records"
    if k == "epoch-beyond-log-end":
        return (f"Kafka drops these entries when it loads the log (kfx recover {d} rewrites leader-epoch-checkpoint "
                "up to the log end); the log lost what those epochs wrote: kfx diff against another replica")
    if k in ("leader-epoch-mismatch", "leader-epoch-regression", "epoch-order"):
        return (f"kfx recover --dry-run {d} (recovery rewrites leader-epoch-checkpoint up to the log end); "
                "kfx diff the replicas to find where they diverge")
    if k == "leader-epoch-boundaries":
        return "nothing to do: where a diverging follower would truncate"
    if k in ("snapshot-mismatch", "snapshot-beyond-log-end"):
        return f"kfx recover {d} rebuilds producer snapshots from the log (backup kept)"
    if k == "log-behind-checkpoint":
        return ("if this is a copy of a running broker's log dir, copy it again after stopping the broker; "
                "otherwise the records past the log end are lost here: kfx diff against another replica")
    if k == "checkpoint-beyond-log-end":
        return "the log lost data the checkpoint had seen (a truncated disk?): kfx diff against another replica before restarting"
    if k in ("topic-not-in-metadata", "topic-id-mismatch"):
        return (f"the metadata log does not know this directory's topic id: a stray or a recreated topic's old "
                f"copy (a KRaft broker renames such a dir with the -stray suffix and never serves it); keep it as evidence, compare "
                f"kfx dump --cluster-metadata-decoder of __cluster_metadata-0, and move {d} aside only once understood")
    if k in ("cluster-id-mismatch", "node-id-mismatch", "duplicate-directory-id"):
        return ("the broker refuses to start with these log dirs together: find which meta.properties belongs to "
                "another broker or cluster (a disk mounted in the wrong place?) before changing any of them")
    if k == "undecodable-record":
        return (f"the coordinator loading this partition cannot read the record: kfx dump {d} shows it; compare "
                "a replica (kfx diff) before the broker leads this partition")
    if k == "segment-overlap":
        return f"kfx recover --dry-run {d}; keep the original files as evidence and kfx salvage into a new directory"
    return f"kfx recover --dry-run {d} shows what Kafka's log loading would do"


def problem_remedy(p: Problem) -> str:
    """The remedy for a :class:`~kafkaforensics.errors.Problem` of ``kfx verify`` (the partition dir
    taken from its file)."""
    d = os.path.dirname(os.path.abspath(p.file)) if p.file else "."
    return remedy_for(_ProblemAt(p.kind, p.file, p.offset), d if parse_partition_dir_name(d) else (p.file or "."))
