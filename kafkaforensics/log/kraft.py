"""The KRaft metadata partition's own files: snapshot ``.checkpoint`` files, ``bootstrap.checkpoint`` and
``quorum-state``.

* A snapshot (``<end offset, 20 digits>-<epoch, 10 digits>.checkpoint`` in ``__cluster_metadata-0``) and
  ``bootstrap.checkpoint`` (in the controller's metadata log dir) are record batches v2: a control batch
  whose first record is a SnapshotHeader (control type 3), batches of metadata records, and a control
  batch with a SnapshotFooter (control type 4) last (Kafka's RecordsSnapshotWriter); 3.9+ snapshots
  also hold KRaftVersion / Voters control records after the header.
* ``quorum-state`` is QuorumStateData as JSON (field names with a lower-case first letter) plus a
  ``data_version`` field (Kafka's FileQuorumStateStore), versions 0 and 1.
* The metadata log's records as a broker applies them (:func:`metadata_records`: the newest snapshot,
  then the log after it), and what they leave: topic names and ids, topic configs (:func:`metadata_topics`).
Schemas: :mod:`specs.kafka_messages`; records decoded by :mod:`kafkaforensics.records.internal_topics`.
"""
from __future__ import annotations

import json
import os
from typing import Any

from specs import kafka_messages as K
from specs import message_schema
from specs.record_batch import SNAPSHOT_FOOTER, SNAPSHOT_HEADER

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log import partition  # (partition imports logdir, which imports this module: names used in functions only)
from kafkaforensics.log.segment import KRAFT_SNAPSHOT_RE, BatchScanner, kraft_snapshot_file_name, open_buffer
from kafkaforensics.records import internal_topics


SNAPSHOT_RE = KRAFT_SNAPSHOT_RE
BOOTSTRAP_FILE = "bootstrap.checkpoint"
QUORUM_STATE_FILE = "quorum-state"
PARTIAL_SUFFIX = ".checkpoint.part"   # a snapshot still being written (Kafka deletes it on start-up)


def snapshot_id(name: str) -> tuple[int, int] | None:
    """(end offset, epoch) of a snapshot file name; (0, 0) for bootstrap.checkpoint; None otherwise."""
    name = os.path.basename(name)
    if name == BOOTSTRAP_FILE:
        return (0, 0)
    m = SNAPSHOT_RE.match(name)
    return (int(m.group(1)), int(m.group(2))) if m else None


def snapshots(directory: str) -> list[tuple[tuple[int, int], str]]:
    """((end offset, epoch), name) of each snapshot file in ``directory``, by name."""
    found = ((snapshot_id(n), n) for n in sorted(os.listdir(directory)) if SNAPSHOT_RE.match(n))
    return [(sid, n) for sid, n in found if sid is not None]


snapshot_file_name = kraft_snapshot_file_name


def read_snapshot(path: str) -> dict:
    """Read a snapshot or bootstrap checkpoint whole: its id, header, footer, the metadata records by
    type, and the problems found (a missing or misplaced header/footer, a bad CRC, a record that does
    not decode), each located by byte position and offset."""
    out: dict[str, Any] = {"file": path, "snapshotId": None, "header": None, "footer": None, "controlRecords": [],
           "records": 0, "recordTypes": {}, "batches": 0, "problems": []}
    sid = snapshot_id(path)
    if sid is not None:
        out["snapshotId"] = {"endOffset": sid[0], "epoch": sid[1]}
    problems = out["problems"]

    def bad(b, offset, kind, detail):
        problems.append(Problem(path, None if b is None else b.position, offset, kind, detail))

    with open_buffer(path) as buf:
        scanner = BatchScanner(buf, file=path, base_offset=0)
        try:
            for b in scanner:
                out["batches"] += 1
                if not b.crc_valid():
                    bad(b, b.base_offset, "crc", "batch CRC does not match its bytes")
                    continue
                if out["footer"] is not None:
                    bad(b, b.base_offset, "after-footer", "a batch follows the snapshot footer")
                for r in b.records():
                    if b.is_control:
                        ctype = r.control_type
                        d = internal_topics.decode_metadata_control(ctype, r.value)
                        if ctype == SNAPSHOT_HEADER:
                            if out["batches"] != 1 or out["header"] is not None:
                                bad(b, r.offset, "misplaced-header", "SnapshotHeader is not the first record")
                            out["header"] = d.get("data")
                        elif ctype == SNAPSHOT_FOOTER:
                            out["footer"] = d.get("data")
                        else:
                            out["controlRecords"].append(d)
                        continue
                    if out["header"] is None:
                        bad(b, r.offset, "missing-header", "a metadata record before any SnapshotHeader")
                    try:
                        d = internal_topics.decode_metadata(r.value)
                    except KafkaFormatError as e:
                        bad(b, r.offset, "record", e.problem.detail)
                        continue
                    out["records"] += 1
                    out["recordTypes"][d["type"]] = out["recordTypes"].get(d["type"], 0) + 1
        except KafkaFormatError as e:
            e.located(file=path)
            problems.append(e.problem)
        if scanner.stop is not None:   # torn or damaged bytes where the next batch should begin
            problems.append(scanner.stop)
    if out["header"] is None and not any(p.kind == "missing-header" for p in problems):
        problems.append(Problem(path, 0, None, "missing-header", "no SnapshotHeader control record"))
    if out["footer"] is None:
        problems.append(Problem(path, None, None, "missing-footer",
                                "no SnapshotFooter control record: the snapshot was not completed"))
    return out


def _json_name(name: str) -> str:
    return name[:1].lower() + name[1:]


def read_quorum_state(path: str) -> dict:
    """``{"version": data_version, "data": {...}}`` of a quorum-state file, checked against
    QuorumStateData: every field of the version present with its JSON type; clear errors otherwise."""
    with open(path, encoding="utf-8", errors="replace") as f:
        text = f.read()
    try:
        obj = json.loads(text)
    except json.JSONDecodeError as e:
        raise KafkaFormatError("quorum-state", f"not JSON: {e.msg} at character {e.pos}", file=path,
                               position=e.pos) from None
    if not isinstance(obj, dict) or not isinstance(obj.get("data_version"), int):
        raise KafkaFormatError("quorum-state", "no integer data_version field", file=path)
    v = obj["data_version"]
    schema = K.QuorumStateData
    if not schema.valid[0] <= v <= schema.valid[1]:
        raise KafkaFormatError("quorum-state", f"data_version {v} is not within {schema.valid[0]}..{schema.valid[1]}",
                               file=path)
    return {"version": v, "data": _from_json(schema.fields, obj, v, path, schema.structs)}


_JSON_TYPES = {"int8": int, "int16": int, "int32": int, "int64": int, "uint16": int, "string": str, "uuid": str,
               "bool": bool}


def _from_json(fields, obj, v, path, structs, where="") -> dict:
    out: dict[str, object] = {}
    for f in fields:
        if not message_schema._in(f.versions, v):
            continue
        key = _json_name(f.name)
        if key not in obj:
            raise KafkaFormatError("quorum-state", f"field {where}{key} missing (required in version {v})", file=path)
        val = obj[key]
        if val is None:
            if not message_schema._in(f.nullable, v):
                raise KafkaFormatError("quorum-state", f"field {where}{key} is null", file=path)
            out[f.name] = None
        elif f.type.startswith("[]"):
            if not isinstance(val, list):
                raise KafkaFormatError("quorum-state", f"field {where}{key} is not an array", file=path)
            sub = message_schema._sub_fields(f, structs)
            out[f.name] = [_from_json(sub, e, v, path, structs, f"{where}{key}[{i}].") if sub else e
                           for i, e in enumerate(val)]
        else:
            want = _JSON_TYPES.get(f.type)
            if want is not None and (not isinstance(val, want) or want is int and isinstance(val, bool)):
                raise KafkaFormatError("quorum-state", f"field {where}{key} is {type(val).__name__}, not {f.type}",
                                       file=path)
            out[f.name] = val
    return out


def quorum_state_json(data: dict, version: int) -> str:
    """A quorum-state file's text, as Kafka's FileQuorumStateStore writes it."""
    obj = {_json_name(f.name): data.get(f.name, f.default) for f in K.QuorumStateData.fields if message_schema._in(f.versions, version)}
    if "currentVoters" in obj and obj["currentVoters"] is not None:
        obj["currentVoters"] = [{"voterId": x["VoterId"]} for x in obj["currentVoters"]]
    obj["data_version"] = version
    return json.dumps(obj, separators=(",", ":"))


def check_snapshot_ids(pd) -> list[Problem]:
    """Each snapshot's id against the metadata log, by Kafka's rule for a valid (offset, epoch)
    (ReplicatedLog.validateOffsetAndEpoch, which KafkaMetadataLog applies when it creates a snapshot):
    where the log covers the offset, the epoch must be one of the log's leader epochs and end at or
    after the offset.  A log start offset above zero needs a snapshot to start from."""
    snaps = [(sid, os.path.join(pd.path, n)) for sid, n in snapshots(pd.path)]
    starts: dict[int, int] = {}      # leader epoch -> its first offset in the log
    log_start: int | None = None
    leo: int | None = None
    for _seg, b, _done in partition.Partition.of(pd).batches(producers=False):
        log_start = b.base_offset if log_start is None else log_start
        leo = b.next_offset
        starts.setdefault(b.partition_leader_epoch, b.base_offset)
    problems = []
    if log_start is not None and log_start > 0 and not snaps:
        problems.append(Problem(pd.path, None, log_start, "missing-snapshot",
                                f"the metadata log starts at {log_start} but no snapshot holds what came before"))
    epochs = sorted(starts)
    for (offset, epoch), path in snaps:
        if log_start is None or leo is None or offset <= log_start or offset > leo:
            continue
        later = [starts[e] for e in epochs if e > epoch]
        end = min(later) if later else leo
        if epoch not in starts or end < offset:
            problems.append(Problem(path, None, offset - 1, "snapshot-epoch",
                                    f"snapshot ({offset}, {epoch}) diverges from the metadata log: epoch {epoch} "
                                    + ("is not among the log's leader epochs" if epoch not in starts
                                       else f"ends at offset {end}")))
    return problems


# -- the metadata log's records: topic ids and topic configs as the metadata partition leaves them ------
def metadata_records(metadata_dir: str):
    """The decoded metadata records the partition holds, in the order a broker applies them: the
    newest snapshot's, then the log's after it (bad-CRC batches and undecodable records left out)."""

    def replay(path, base, start):
        with open_buffer(path) as buf:
            for b in BatchScanner(buf, file=path, base_offset=base):
                if b.is_control or not b.crc_valid() or b.last_offset < start:
                    continue
                for r in b.records():
                    if r.offset >= start and r.value is not None:
                        try:
                            yield internal_topics.decode_metadata(r.value)
                        except KafkaFormatError:
                            pass

    snaps = sorted(snapshots(metadata_dir))
    start = 0
    if snaps:
        (end, _), name = snaps[-1]
        yield from replay(os.path.join(metadata_dir, name), 0, 0)
        start = end
    for seg in partition.Partition.scan(metadata_dir).segments:
        yield from replay(seg.log, seg.base_offset, start)


def metadata_topic_ids(metadata_dir: str) -> dict[str, str]:
    """topic name -> topic id as the metadata partition leaves them: the newest snapshot, then the
    log's records after it (TopicRecord adds, RemoveTopicRecord removes)."""
    return metadata_topics(metadata_dir)[0]


#: ConfigRecord's ResourceType of a topic (Kafka's ConfigResource.Type.TOPIC)
TOPIC_CONFIG_RESOURCE = 2


def metadata_topics(metadata_dir: str) -> tuple[dict[str, str], dict[str, dict[str, str]]]:
    """(topic name -> topic id, topic name -> {config: value}) as the metadata partition leaves them:
    the newest snapshot, then the log's records after it (TopicRecord adds, RemoveTopicRecord removes
    the topic and its configs, a topic's ConfigRecord sets a config, with a null value deletes it)."""
    names: dict[str, str] = {}
    configs: dict[str, dict[str, str]] = {}
    for d in metadata_records(metadata_dir):
        data = d.get("data") or {}
        if d.get("type") == "TopicRecord":
            names[data["Name"]] = data["TopicId"]
        elif d.get("type") == "RemoveTopicRecord":
            for n, t in list(names.items()):
                if t == data["TopicId"]:
                    del names[n]
                    configs.pop(n, None)
        elif d.get("type") == "ConfigRecord" and data.get("ResourceType") == TOPIC_CONFIG_RESOURCE:
            topic = configs.setdefault(data["ResourceName"], {})
            if data.get("Value") is None:
                topic.pop(data["Name"], None)
            else:
                topic[data["Name"]] = data["Value"]
    return names, {n: c for n, c in configs.items() if c}
