"""Log-dir identity: ``meta.properties`` (v0/v1), ``.kafka_cleanshutdown``, and the topic ids of
``partition.metadata`` files against the KRaft metadata log.

Facts carried over from Kafka (metadata.properties.MetaProperties / MetaPropertiesEnsemble,
DirectoryId, storage CleanShutdownFileHandler):
* meta.properties: ``version`` (0 when missing); v0 names the node ``broker.id`` and may lack
  ``cluster.id``; v1 requires ``node.id`` and ``cluster.id``; ``directory.id`` (optional, both versions)
  is a Kafka Uuid (base64url, 16 bytes) and must not be one of the 100 reserved ids (0..99);
* across one broker's log dirs the cluster id and node id agree and no two dirs share a directory id;
* ``.kafka_cleanshutdown``: present (whatever it holds), the broker shut down cleanly and its logs
  load without recovery; absent, recovery runs from the recovery point. Empty up to Kafka 3.6, then
  holding the broker epoch (JSON ``{"version": 0, "brokerEpoch": N}``), see :func:`read_clean_shutdown`.
"""
from __future__ import annotations

import base64
import binascii
import json
import os

from specs import checkpoints as C
from specs.lazy import lazy

from kafkaforensics.errors import KafkaFormatError, Problem
from kafkaforensics.log import kraft
from kafkaforensics.log.partition import Partition, find_partitions
from kafkaforensics.log.segment import BatchScanner, open_buffer

#: the metadata log's records: only for a KRaft log dir's topic ids
internal_topics = lazy("kafkaforensics.records.internal_topics", globals())


CLEAN_SHUTDOWN_FILE = ".kafka_cleanshutdown"
METADATA_PARTITION = "__cluster_metadata-0"
METADATA_TOPIC_ID = "AAAAAAAAAAAAAAAAAAAAAQ"   # Kafka's Uuid.METADATA_TOPIC_ID (0, 1)


def _read(path: str) -> str:
    with open(path, encoding="utf-8", errors="replace") as f:
        return f.read()


def _uuid_bytes(s: str) -> bytes | None:
    try:
        raw = base64.urlsafe_b64decode(s + "=" * (-len(s) % 4))
    except (binascii.Error, ValueError):
        return None
    return raw if len(raw) == 16 and len(s) == 22 else None


def read_meta_properties(path: str) -> dict:
    """{version, clusterId, nodeId, directoryId} of a meta.properties file, validated as Kafka does."""
    props = C.parse_properties(_read(path))
    version = props.get("version", "0")
    if version not in ("0", "1"):
        raise KafkaFormatError("meta.properties", f"version {version!r} (only 0 and 1 exist)", file=path)
    v = int(version)
    node_key = "broker.id" if v == 0 else "node.id"
    node = props.get(node_key)
    if node is None and v == 1:
        raise KafkaFormatError("meta.properties", "node.id was not specified (required in version 1)", file=path)
    if v == 1 and not props.get("cluster.id"):
        raise KafkaFormatError("meta.properties", "cluster.id was not specified (required in version 1)", file=path)
    try:
        node_id = None if node is None else int(node)
    except ValueError:
        raise KafkaFormatError("meta.properties", f"{node_key} {node!r} is not an integer", file=path) from None
    did = props.get("directory.id")
    if did is not None:
        raw = _uuid_bytes(did)
        if raw is None:
            raise KafkaFormatError("meta.properties", f"directory.id {did!r} is not a Kafka Uuid", file=path)
        if raw[:8] == bytes(8) and int.from_bytes(raw[8:], "big") < 100:
            raise KafkaFormatError("meta.properties", f"directory.id {did} is a reserved directory id", file=path)
    return {"version": v, "clusterId": props.get("cluster.id"), "nodeId": node_id, "directoryId": did}


def read_clean_shutdown(path: str) -> dict:
    """{version, brokerEpoch, format} of a ``.kafka_cleanshutdown`` marker, in every form brokers wrote.

    Kafka decides a clean shutdown by the file's existence alone (CleanShutdownFileHandler.exists);
    what it holds is the broker epoch (KIP-966), read where it can be and otherwise taken as unknown.
    Up to 3.6 LogManager created the marker empty (``format`` "empty"); later brokers write JSON,
    ``{"version":0,"brokerEpoch":N}`` (numbers, or strings from the handler that wrote a string map);
    one handler wrote ``version: 0`` and ``brokerEpoch: N`` lines ("text"). Anything else is "unknown"
    (version and epoch None): still a clean shutdown to Kafka. Only an unreadable file raises."""
    try:
        text = _read(path)
    except OSError as e:
        raise KafkaFormatError("io", str(e), file=path) from None
    if not text.strip():
        return {"version": None, "brokerEpoch": None, "format": "empty"}
    fields = None
    try:
        obj = json.loads(text)
        if isinstance(obj, dict):
            fields, fmt = obj, "json"
    except json.JSONDecodeError:
        pairs = [ln.split(":", 1) for ln in text.splitlines() if ":" in ln]
        if pairs:
            fields, fmt = {k.strip(): v.strip() for k, v in pairs}, "text"
    if fields is not None:
        version, epoch = _as_int(fields.get("version")), _as_int(fields.get("brokerEpoch"))
        if epoch is not None:
            return {"version": version, "brokerEpoch": epoch, "format": fmt}
    return {"version": None, "brokerEpoch": None, "format": "unknown"}


def _as_int(v) -> int | None:
    if isinstance(v, bool):
        return None
    if isinstance(v, int):
        return v
    if isinstance(v, str):
        try:
            return int(v.strip())
        except ValueError:
            return None
    return None


def clean_shutdown_note(path: str, cs: dict) -> str:
    """One line on what a clean-shutdown marker says (verify's and analyze's note)."""
    what = {"empty": "an empty marker, as brokers up to 3.6 write it",
            "unknown": "a marker in no format Kafka writes; Kafka goes by its existence"}.get(
        cs["format"], f"at broker epoch {cs['brokerEpoch']}")
    return f"clean shutdown ({what}): Kafka loads these logs without recovery"


def check_log_dirs(log_dirs) -> tuple[list[Problem], list[dict]]:
    """Validate each log dir's meta.properties and cross-check them as one broker's dirs (Kafka's
    MetaPropertiesEnsemble.verify): problems and, per dir, its identity and clean-shutdown state."""
    problems, rows = [], []
    cluster = node = None
    seen: dict[str, str] = {}
    for d in log_dirs:
        row = {"logDir": d, "metaProperties": None, "cleanShutdown": None}
        rows.append(row)
        mp = os.path.join(d, C.META_PROPERTIES_FILE)
        cs = os.path.join(d, CLEAN_SHUTDOWN_FILE)
        if os.path.exists(cs):
            try:
                row["cleanShutdown"] = read_clean_shutdown(cs)
            except KafkaFormatError as e:
                problems.append(e.problem)
        if not os.path.exists(mp):
            continue
        try:
            m = row["metaProperties"] = read_meta_properties(mp)
        except KafkaFormatError as e:
            problems.append(e.problem)
            continue
        if m["clusterId"]:
            if cluster is None:
                cluster = (m["clusterId"], mp)
            elif m["clusterId"] != cluster[0]:
                problems.append(Problem(mp, None, None, "cluster-id-mismatch",
                                        f"cluster.id {m['clusterId']} but {cluster[1]} has {cluster[0]}"))
        if m["nodeId"] is not None:
            if node is None:
                node = (m["nodeId"], mp)
            elif m["nodeId"] != node[0]:
                problems.append(Problem(mp, None, None, "node-id-mismatch",
                                        f"node id {m['nodeId']} but {node[1]} has {node[0]}"))
        if m["directoryId"]:
            prev = seen.setdefault(m["directoryId"], d)
            if prev != d:
                problems.append(Problem(mp, None, None, "duplicate-directory-id",
                                        f"directory.id {m['directoryId']} is also the id of {prev}"))
    return problems, rows


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

    snaps = sorted((kraft.snapshot_id(n), n) for n in os.listdir(metadata_dir) if kraft.SNAPSHOT_RE.match(n))
    start = 0
    if snaps:
        (end, _), name = snaps[-1]
        yield from replay(os.path.join(metadata_dir, name), 0, 0)
        start = end
    for seg in Partition.scan(metadata_dir).segments:
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


def check_topic_ids(log_dir: str, topic_ids: dict[str, str]) -> list[Problem]:
    """Each ``<topic>-<n>/partition.metadata`` of ``log_dir`` against the metadata log's topic ids: a
    different id means the directory belongs to a deleted/recreated topic (Kafka refuses to load it)."""
    problems = []
    for pd in find_partitions(log_dir):
        pm = os.path.join(pd.path, C.PARTITION_METADATA_FILE)
        if pd.topic is None or not os.path.exists(pm):
            continue
        try:
            tid = C.parse_partition_metadata(_read(pm), file=pm)["topicId"]
        except KafkaFormatError as e:
            problems.append(e.problem)
            continue
        want = METADATA_TOPIC_ID if pd.name == METADATA_PARTITION else topic_ids.get(pd.topic)
        if want is None:
            problems.append(Problem(pm, None, None, "topic-not-in-metadata",
                                    f"topic {pd.topic} (id {tid}) is not in the metadata log"))
        elif want != tid:
            problems.append(Problem(pm, None, None, "topic-id-mismatch",
                                    f"topic id {tid}, but the metadata log names {pd.topic} {want}"))
    return problems
