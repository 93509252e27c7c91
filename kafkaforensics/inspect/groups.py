"""``kfx groups``: committed offsets reconstructed from __consumer_offsets segments, with lag.

Records are replayed in offset order per __consumer_offsets partition; the latest commit of a
(group, topic, partition) wins and a tombstone (null value) removes it, as the group coordinator's
loading does; transactional commits count only once their producer's COMMIT marker follows
(:func:`replay_offsets`).  :func:`group_members` lists the members of classic, KIP-848 consumer, share
and streams groups.  Lag is measured against the log end offset of the matching
``<topic>-<partition>`` directory in the same log dir, when there is one (a dir whose log is gone,
``noLog``, ends where Kafka would start it: at its log start). A commit past that log end offset
(``pastLogEnd``; its lag unknown) is evidence that the log lost records the group had already
consumed: a truncation, an unclean leader election, or segments deleted by hand. A partition with no
dir in the log dir (it may live on another broker) has no log end here (None).
"""
from __future__ import annotations


import os

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.inspect.explain import lag_split, lag_text, scan
from kafkaforensics.records.internal_topics import decode_offsets
from kafkaforensics.log.kraft import metadata_topic_ids
from kafkaforensics.log.log_loader import empty_partition_log_end
from kafkaforensics.log.partition import METADATA_PARTITION, Partition, find_partitions
from kafkaforensics.log.paths import LOG_DIR, PathUsageError, classify_for
from kafkaforensics.log.unified_log import unify_all


def _log_end_offset(pd) -> int:
    """The log end offset of a partition dir as Kafka loads it (one with no segment: where the load
    puts it, :func:`~kafkaforensics.log.log_loader.empty_partition_log_end`)."""
    p = Partition.of(pd)
    return p.load(producers=False).log_end_offset if pd.segments else empty_partition_log_end(p)


def replay_offsets(pd) -> list[tuple[dict, dict | None, int]]:
    """The decoded records of one __consumer_offsets partition in the order the group coordinator
    applies them: (key, value or None, record offset).

    Transactional commits (a transactional producer's TxnOffsetCommit) are held per producer id until
    that producer's control marker: a COMMIT applies them, an ABORT drops them, and those of a
    transaction still open at the end of the log are not applied -- as the coordinator's loading does.
    Batches with a bad CRC and records that do not decode are left out."""
    applied: list[tuple[dict, dict | None, int]] = []
    pending: dict[int, list] = {}
    for _seg, b, _done in Partition.of(pd).batches(damage="skip", producers=False):
        if b.is_control:
            recs = b.records()
            ctl = recs[0].control() if recs else None
            held = pending.pop(b.producer_id, [])
            if ctl and ctl["type"] == "COMMIT":
                applied.extend(held)
            continue
        out = pending.setdefault(b.producer_id, []) if b.is_transactional else applied
        for r in b.records():
            try:
                k, v = decode_offsets(r.key, r.value)
            except KafkaFormatError:
                continue
            out.append((k, v, r.offset))
    return applied


OFFSETS_TOPIC = "__consumer_offsets"


def _inputs(paths, remote=None) -> tuple[list, list, list[str]]:
    """(the live __consumer_offsets partitions, the log dirs' other partitions, the log dirs) of the
    paths groups is given: log dirs, or __consumer_offsets partition dirs (one meaning for every
    path, :mod:`kafkaforensics.log.paths`; anything else raises its ``PathUsageError``).  With a
    ``remote`` tier each partition is read over both tiers (:func:`~kafkaforensics.log.unified_log.unify`)."""
    paths = [paths] if isinstance(paths, (str, os.PathLike)) else list(paths)
    kpaths = classify_for(paths, "groups", accept=(LOG_DIR, "partition-dir"),
                          what="a log dir or a __consumer_offsets partition dir")
    offsets, others, dirs = [], [], []
    for kp in kpaths:
        if kp.kind == LOG_DIR:
            dirs.append(str(kp.path))
            parts = find_partitions(str(kp.path))
            offsets += [pd for pd in parts if pd.topic == OFFSETS_TOPIC and pd.dir_state == "live"]
            others += [pd for pd in parts if pd.topic != OFFSETS_TOPIC and pd.dir_state == "live"]
        else:
            pd = Partition.scan(str(kp.path))
            if pd.topic != OFFSETS_TOPIC:
                raise PathUsageError(f"{kp.path}: kfx groups takes a log dir or a __consumer_offsets partition dir, "
                                     f"not a partition dir of {pd.topic or 'no topic'}")
            offsets.append(pd)
            if kp.log_dir is not None and kp.log_dir not in dirs:
                dirs.append(kp.log_dir)
                others += [q for q in find_partitions(kp.log_dir) if q.topic != OFFSETS_TOPIC and q.dir_state == "live"]
    return unify_all(offsets, remote), unify_all(others, remote), dirs


def committed_offsets(paths, remote=None) -> list[dict]:
    """The latest committed offset of every (group, topic, partition) the __consumer_offsets
    partitions of ``paths`` (log dirs or such partition dirs) hold, with the lag against the log
    end offset of that partition's dir in the same log dir (``remote``: a remote tier, each partition
    read over both tiers)."""
    offsets, others, _dirs = _inputs(paths, remote)
    latest: dict[tuple, dict] = {}
    for pd in offsets:
        for k, v, offset in replay_offsets(pd):
            if k.get("kind") != "offset_commit":
                continue
            d = k["data"]
            key = (d["group"], d["topic"], d["partition"])
            if v is None:
                latest.pop(key, None)
            elif "data" in v:
                latest[key] = {"offset": v["data"]["offset"], "metadata": v["data"]["metadata"],
                               "commitTimestamp": v["data"]["commitTimestamp"],
                               "leaderEpoch": v["data"]["leaderEpoch"], "recordOffset": offset}
    leos = {(pd.topic, pd.partition): _log_end_offset(pd) for pd in others}  # a -delete copy never stands in
    no_log = {(pd.topic, pd.partition) for pd in others if not pd.segments}
    rows = []
    for (group, topic, part), c in sorted(latest.items()):
        leo = leos.get((topic, part))
        rows.append({"group": group, "topic": topic, "partition": part, "offset": c["offset"],
                     "metadata": c["metadata"], "commitTimestamp": c["commitTimestamp"],
                     "leaderEpoch": c["leaderEpoch"], "logEndOffset": leo,
                     "lag": None if leo is None or c["offset"] > leo else leo - c["offset"],
                     "pastLogEnd": leo is not None and c["offset"] > leo, "noLog": (topic, part) in no_log})
    return rows


def explain_lag(paths, group: str | None = None, remote=None) -> list[dict]:
    """:func:`committed_offsets` (of ``group`` only, when given), each row with ``explain``: its lag
    split by what a read_committed consumer makes of it (:func:`~.explain.lag_split`: data to consume,
    control markers, aborted records, records held behind the last stable offset, offsets compaction
    removed, offsets below the log start) and that as one line (``text``); None where the partition has
    no dir here or the commit lies past its log end."""
    rows = [r for r in committed_offsets(paths, remote) if group is None or r["group"] == group]
    _offsets, others, _dirs = _inputs(paths, remote)
    parts = {(pd.topic, pd.partition): pd for pd in others}
    views = {}
    for r in rows:
        tp = (r["topic"], r["partition"])
        if tp not in parts or r["pastLogEnd"]:
            r["explain"] = None
            continue
        if tp not in views:
            views[tp] = scan(parts[tp])
        split = lag_split(views[tp], r["offset"])
        r["explain"] = split | {"text": lag_text(split)}
    return rows


def no_commits_line(paths) -> str:
    """What ``kfx groups`` says when ``paths`` hold no committed offset: where it looked, and why."""
    offsets, _others, _dirs = _inputs(paths)
    where = " ".join(str(p) for p in ([paths] if isinstance(paths, (str, os.PathLike)) else paths))
    why = (f"no {OFFSETS_TOPIC} partition there" if not offsets else
           f"{len(offsets)} {OFFSETS_TOPIC} partition(s), none holding a live offset commit")
    return f"no consumer group commits found in {where} ({why})"


def _assignment_names(parts, names: dict | None = None) -> list[str]:
    """``topic:partitions`` strings of an assignment (topic ids named through ``names`` when known)."""
    out = []
    for tp in parts or ():
        tid = tp.get("TopicId")
        name = tp.get("Topic") or (names or {}).get(tid) or tid
        out.append(f"{name}:{','.join(str(p) for p in tp.get('Partitions') or tp.get('partitions') or [])}")
    return out


def _tasks(a: dict) -> list[str]:
    """A streams member's tasks as ``subtopology:partitions`` strings (standby and warm-up ones marked)."""
    out = []
    for field, mark in (("ActiveTasks", ""), ("StandbyTasks", "(standby)"), ("WarmupTasks", "(warmup)")):
        for t in a.get(field) or ():
            out.append(f"{t['SubtopologyId']}:{','.join(str(p) for p in t.get('Partitions') or [])}{mark}")
    return out


def _source_topics(topology: dict | None) -> list[str] | None:
    """The topics a streams group's topology reads: its subtopologies' source and repartition source topics."""
    if topology is None:
        return None
    names: set[str] = set()
    for s in topology.get("Subtopologies") or ():
        names.update(s.get("SourceTopics") or ())
        names.update(t["Name"] for t in s.get("RepartitionSourceTopics") or ())
    return sorted(names)


def group_members(paths, remote=None) -> list[dict]:
    """The members of every group as the offsets log leaves them: classic groups (the latest
    GroupMetadataValue's members, subscriptions and assignments expanded) and KIP-848 consumer, share
    and streams groups (member metadata and current assignment records; a tombstone removes a member;
    a streams member subscribes to its group's topology's source topics and is assigned tasks)."""
    classic: dict[str, dict] = {}
    members: dict[tuple, dict] = {}
    assignments: dict[tuple, dict] = {}
    topologies: dict[str, dict] = {}
    member_kinds = {"consumer_group_member_metadata": "consumer", "share_group_member_metadata": "share",
                    "streams_group_member_metadata": "streams"}
    assignment_kinds = {"consumer_group_current_member_assignment": "consumer",
                        "share_group_current_member_assignment": "share",
                        "streams_group_current_member_assignment": "streams"}
    offsets, _others, dirs = _inputs(paths, remote)
    for pd in offsets:
        for k, v, _ in replay_offsets(pd):
            kind = k.get("kind")
            if kind is None:  # a record type the decoder does not know: no key data to apply
                continue
            d = k["data"]
            if kind == "group_metadata":
                if v is None or "data" not in v:
                    classic.pop(d["group"], None)
                else:
                    classic[d["group"]] = v["data"]
            elif kind == "streams_group_topology":
                if v is None or "data" not in v:
                    topologies.pop(d["GroupId"], None)
                else:
                    topologies[d["GroupId"]] = v["data"]
            elif kind in member_kinds or kind in assignment_kinds:
                table = members if kind in member_kinds else assignments
                key = (member_kinds.get(kind) or assignment_kinds[kind], d["GroupId"], d["MemberId"])
                if v is None or "data" not in v:
                    table.pop(key, None)
                else:
                    table[key] = v["data"]
    names = {}
    for md in (os.path.join(d, METADATA_PARTITION) for d in dirs):
        if assignments and os.path.isdir(md):   # KIP-848 assignments name topics by id: the metadata log knows them
            names.update({tid: name for name, tid in metadata_topic_ids(md).items()})
    rows = []
    for group, g in sorted(classic.items()):
        for m in g.get("members") or ():
            sub, asg = m.get("subscription"), m.get("assignment")
            rows.append({"group": group, "protocol": "classic", "protocolType": g.get("protocolType"),
                         "memberId": m["memberId"], "instanceId": m.get("groupInstanceId"),
                         "clientId": m["clientId"], "clientHost": m["clientHost"],
                         "subscribedTopics": sub["data"]["Topics"] if isinstance(sub, dict) else None,
                         "assignment": _assignment_names(asg["data"]["AssignedPartitions"]) if isinstance(asg, dict) else None,
                         "generation": g.get("generation")})
    for (proto, group, member), m in sorted(members.items()):
        a = assignments.get((proto, group, member), {})
        streams = proto == "streams"
        rows.append({"group": group, "protocol": proto, "protocolType": proto, "memberId": member,
                     "instanceId": m.get("InstanceId"), "clientId": m.get("ClientId"),
                     "clientHost": m.get("ClientHost"),
                     "subscribedTopics": (_source_topics(topologies.get(group)) if streams
                                          else m.get("SubscribedTopicNames")),
                     "assignment": ((_tasks(a) if streams else _assignment_names(a.get("AssignedPartitions"), names))
                                    if a else None),
                     "generation": a.get("MemberEpoch")})
    return rows
