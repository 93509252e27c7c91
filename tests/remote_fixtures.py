"""A test writer of remote tiers (issue 55), reused by the remote-tier tests of every area: segments of
a partition dir uploaded as Aiven's tiered-storage plugin uploads them (object keys, ``.log`` chunks
plain, zstd-compressed or encrypted, the ``.indexes`` object and the JSON manifest, byte for byte as
its source describes them), or copied as the raw layout other uploaders leave (files under
``topic/partition/`` with an ``offset.wm`` watermark).  ``dest``: a local dir, ``file://`` or ``s3://``."""
from __future__ import annotations

import base64
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import uuid
from contextlib import contextmanager

from pyarrow import fs as pafs

from kafkaforensics.log.remote import aiven
from kafkaforensics.log.remote.keys import wrap
from kafkaforensics.log.remote.store import Store
from kafkaforensics.log.segment import INDEX, LOG, SNAPSHOT, TIMEINDEX, TXNINDEX, Segment, file_name, offset_from_name
from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.batch import Record
from kafkaforensics.records.builder import build_v2
from kafkaforensics.records.internal_topics import encode_metadata
from specs import kafka_messages as K

#: the plugin's default chunk size is 4 MiB; the tests cut small segments in many chunks
CHUNK_SIZE = 1000
TRANSFORMS = ("plain", "zstd", "encrypted")


def kafka_uuid() -> str:
    """A Kafka ``Uuid.toString()``: 16 random bytes as unpadded URL-safe base64 (22 characters)."""
    return base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")


def rsa_key(tmp_path, key_id: str = "key1"):
    """(private key, PEM path) of a fresh RSA key-encryption key written to ``tmp_path``."""
    from cryptography.hazmat.primitives import serialization
    from cryptography.hazmat.primitives.asymmetric import rsa
    key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
    path = os.path.join(str(tmp_path), f"{key_id}.pem")
    with open(path, "wb") as f:
        f.write(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                  serialization.NoEncryption()))
    return key, path


def _put(store: Store, key: str, data: bytes) -> None:
    path = f"{store.root}/{key}"
    if not store.scheme:
        os.makedirs(os.path.dirname(path), exist_ok=True)
    with store.fs.open_output_stream(path) as f:
        f.write(data)


def _read(path: str) -> bytes:
    try:
        with open(path, "rb") as f:
            return f.read()
    except FileNotFoundError:
        return b""


def _topic_partition(part_dir: str) -> tuple[str, int]:
    topic, _, partition = os.path.basename(os.path.abspath(part_dir)).rpartition("-")
    return topic, int(partition)


def _chunks(data: bytes, chunk_size: int, compression: bool, data_key, aad) -> tuple[bytes, dict]:
    """The ``.log`` object and its manifest ``chunkIndex`` (variable when compressed, else fixed)."""
    out, sizes = [], []
    for i in range(0, len(data), chunk_size):
        t = aiven.transform(data[i:i + chunk_size], compression, data_key, aad, os.urandom(aiven.IV_SIZE))
        out.append(t)
        sizes.append(len(t))
    index = aiven.ChunkIndex(chunk_size, len(data), tuple(sizes))
    return b"".join(out), aiven.chunk_index_json(index, variable=compression)


def _epochs_text(part_dir: str, end: int) -> bytes:
    """The leader-epoch index the broker hands the plugin: the checkpoint's entries below the segment's end."""
    text = _read(os.path.join(part_dir, "leader-epoch-checkpoint")).decode()
    rows = [line for line in text.splitlines()[2:] if line.strip() and int(line.split()[1]) < end]
    return f"0\n{len(rows)}\n".encode() + b"".join(f"{r}\n".encode() for r in rows)


def _indexes(part_dir: str, base: int, end: int, data_key, aad) -> tuple[bytes, dict]:
    """The ``.indexes`` object (offset, time, producer snapshot, leader epoch, transaction, each
    encrypted alone when encrypted, never compressed) and the manifest's ``segmentIndexes``."""
    parts = [("offset", _read(os.path.join(part_dir, file_name(base, INDEX)))),
             ("timestamp", _read(os.path.join(part_dir, file_name(base, TIMEINDEX)))),
             ("producerSnapshot", _read(os.path.join(part_dir, file_name(end, SNAPSHOT)))),
             ("leaderEpoch", _epochs_text(part_dir, end))]
    txn = os.path.join(part_dir, file_name(base, TXNINDEX))
    if os.path.exists(txn):
        parts.append(("transaction", _read(txn)))
    blob, where = b"", {"transaction": None}
    for name, data in parts:
        if data and data_key is not None:
            data = aiven.encrypt(data, data_key, aad, os.urandom(aiven.IV_SIZE))
        where[name] = {"position": len(blob), "size": len(data)}
        blob += data
    return blob, {k: where[k] for k in ("offset", "timestamp", "producerSnapshot", "leaderEpoch", "transaction")}


def _segment_facts(path: str) -> dict:
    """What RemoteLogSegmentMetadata says of a segment: its end offset, largest timestamp and the
    first offset of each leader epoch in it."""
    seg, end, max_ts, epochs = Segment.of_file(path), None, -1, {}
    for b in seg.batches():
        end, max_ts = b.last_offset, max(max_ts, b.max_timestamp)
        epochs.setdefault(b.partition_leader_epoch if b.magic >= 2 else 0, b.base_offset)
    return {"end_offset": seg.base_offset if end is None else end, "max_timestamp": max_ts,
            "epochs": sorted(epochs.items(), key=lambda e: e[1])}


def _metadata_json(topic: str, topic_id: str, partition: int, seg_id: str, base: int, facts: dict) -> dict:
    """The manifest's ``remoteLogSegmentMetadata`` as the plugin's KafkaTypeSerdeModule writes it."""
    return {"remoteLogSegmentId": {"topicIdPartition": {"topicId": topic_id, "topicPartition": {
                "topic": topic, "partition": partition}}, "id": seg_id},
            "startOffset": base, "endOffset": facts["end_offset"], "maxTimestampMs": facts["max_timestamp"],
            "brokerId": 1, "eventTimestampMs": facts["max_timestamp"],
            "segmentLeaderEpochs": {str(e): o for e, o in facts["epochs"]}}


def upload(segment_paths, dest: str, transform: str = "plain", *, prefix: str = "", topic_id: str | None = None,
           chunk_size: int = CHUNK_SIZE, public_key=None, key_id: str = "key1") -> list[dict]:
    """Upload ``.log`` files (of one partition dir, in offset order) to ``dest`` as the plugin does;
    ``transform`` plain, zstd or encrypted (``public_key``: the RSA key-encryption key's public half).
    Returns, per segment, its keys and ids (what ``__remote_log_metadata`` would say)."""
    assert transform in TRANSFORMS
    store, out = Store(dest), []
    paths = sorted(segment_paths, key=lambda p: offset_from_name(p) or 0)
    part_dir = os.path.dirname(os.path.abspath(paths[0]))
    topic, partition = _topic_partition(part_dir)
    topic_id = topic_id or kafka_uuid()
    others = sorted(offset_from_name(f) or 0 for f in os.listdir(part_dir) if f.endswith(LOG))
    for path in paths:
        base, data = offset_from_name(path) or 0, _read(path)
        end = next((o for o in others if o > base), base + 1)
        data_key = os.urandom(32) if transform == "encrypted" else None
        aad = os.urandom(32) if transform == "encrypted" else None
        blob, chunk_index = _chunks(data, chunk_size, transform == "zstd", data_key, aad)
        indexes, segment_indexes = _indexes(part_dir, base, end, data_key, aad)
        seg_id, facts = kafka_uuid(), _segment_facts(path)
        manifest: dict = {"version": "1", "chunkIndex": chunk_index, "segmentIndexes": segment_indexes,
                          "compression": transform == "zstd"}
        if data_key is not None:
            manifest["encryption"] = {"dataKey": f"{key_id}:{base64.b64encode(wrap(public_key, data_key)).decode()}",
                                      "aad": base64.b64encode(aad or b"").decode()}
        manifest["remoteLogSegmentMetadata"] = _metadata_json(topic, topic_id, partition, seg_id, base, facts)
        keys = {s: aiven.object_key(prefix, topic, topic_id, partition, base, seg_id, s)
                for s in (aiven.LOG_SUFFIX, aiven.INDEXES_SUFFIX, aiven.MANIFEST_SUFFIX)}
        _put(store, keys[aiven.LOG_SUFFIX], blob)
        _put(store, keys[aiven.INDEXES_SUFFIX], indexes)
        _put(store, keys[aiven.MANIFEST_SUFFIX], json.dumps(manifest, separators=(",", ":")).encode())
        out.append({"topic": topic, "partition": partition, "topic_id": topic_id, "segment_id": seg_id,
                    "base_offset": base, "end_offset": facts["end_offset"], "max_timestamp": facts["max_timestamp"],
                    "epochs": facts["epochs"], "size": len(data), "keys": keys})
    return out


#: RemoteLogSegmentState's values (RemoteLogSegmentState.java)
COPY_SEGMENT_STARTED, COPY_SEGMENT_FINISHED, DELETE_SEGMENT_STARTED, DELETE_SEGMENT_FINISHED = 0, 1, 2, 3


def remote_log_metadata(uploads: list[dict], states: dict | None = None, broker_id: int = 1) -> list[bytes]:
    """The ``__remote_log_metadata`` record values a broker writes for :func:`upload`'s segments: a
    RemoteLogSegmentMetadataRecord (COPY_SEGMENT_STARTED) each, then an update to each one's state in
    ``states`` (segment id -> state; default COPY_SEGMENT_FINISHED; None: no update, a failed copy)."""
    out = []
    for u in uploads:
        seg_id = {"TopicIdPartition": {"Name": u["topic"], "Id": u["topic_id"], "Partition": u["partition"]},
                  "Id": u["segment_id"]}
        out.append(encode_metadata(K.RemoteLogSegmentMetadataRecord, 0, {
            "RemoteLogSegmentId": seg_id, "StartOffset": u["base_offset"], "EndOffset": u["end_offset"],
            "BrokerId": broker_id, "MaxTimestampMs": u["max_timestamp"], "EventTimestampMs": u["max_timestamp"],
            "SegmentLeaderEpochs": [{"LeaderEpoch": e, "Offset": o} for e, o in u["epochs"]],
            "SegmentSizeInBytes": u["size"], "CustomMetadata": None, "RemoteLogSegmentState": COPY_SEGMENT_STARTED}))
        state = (states or {}).get(u["segment_id"], COPY_SEGMENT_FINISHED)
        for s in ([] if state in (None, COPY_SEGMENT_STARTED) else range(COPY_SEGMENT_FINISHED, state + 1)):
            out.append(encode_metadata(K.RemoteLogSegmentMetadataUpdateRecord, 0, {
                "RemoteLogSegmentId": seg_id, "BrokerId": broker_id, "EventTimestampMs": u["max_timestamp"],
                "CustomMetadata": None, "RemoteLogSegmentState": s}))
    return out


def write_remote_log_metadata(log_dir: str, uploads: list[dict], states: dict | None = None) -> str:
    """``<log_dir>/__remote_log_metadata-0`` holding :func:`remote_log_metadata`'s records; its path."""
    values = remote_log_metadata(uploads, states)
    return write_partition(os.path.join(str(log_dir), "__remote_log_metadata-0"),
                           [build_v2([Record(i, 0, None, v, []) for i, v in enumerate(values)], base_offset=0)])


def split_partition(part_dir: str, log_dir: str, n_remote: int, dest: str, transform: str = "plain",
                    **upload_kw) -> list[dict]:
    """A partition over both tiers, as a broker with tiered storage leaves it: ``part_dir`` copied into
    ``log_dir`` (as ``<log_dir>/<its name>``), its first ``n_remote`` segments uploaded to ``dest`` (as
    :func:`upload`, with ``transform`` and ``upload_kw``) and deleted from the copy (local retention;
    the producer snapshots stay).  Returns :func:`upload`'s list."""
    local = os.path.join(str(log_dir), os.path.basename(os.path.abspath(part_dir)))
    shutil.copytree(part_dir, local)
    logs = sorted(f for f in os.listdir(part_dir) if f.endswith(LOG))[:n_remote]
    up = upload([os.path.join(part_dir, f) for f in logs], dest, transform, **upload_kw)
    for name in logs:
        for f in os.listdir(local):
            if f.startswith(name[:20]) and not f.endswith(SNAPSHOT):
                os.remove(os.path.join(local, f))
    return up


def upload_raw(segment_paths, dest: str, *, style: str = "slash", watermark: int | None = None) -> list[str]:
    """Copy segments with their indexes under ``topic/partition/`` (``style`` slash) or ``topic-partition/``
    (dash), and an ``offset.wm`` watermark (default: the last segment's next base offset)."""
    store, keys = Store(dest), []
    paths = sorted(segment_paths, key=lambda p: offset_from_name(p) or 0)
    part_dir = os.path.dirname(os.path.abspath(paths[0]))
    topic, partition = _topic_partition(part_dir)
    where = f"{topic}/{partition}" if style == "slash" else f"{topic}-{partition}"
    for path in paths:
        base = offset_from_name(path) or 0
        for suffix in (LOG, INDEX, TIMEINDEX, TXNINDEX):
            src = os.path.join(part_dir, file_name(base, suffix))
            if os.path.exists(src):
                keys.append(f"{where}/{file_name(base, suffix)}")
                _put(store, keys[-1], _read(src))
    if watermark is None:
        others = sorted(offset_from_name(f) or 0 for f in os.listdir(part_dir) if f.endswith(LOG))
        last = offset_from_name(paths[-1]) or 0
        watermark = next((o for o in others if o > last), last)
    _put(store, f"{where}/offset.wm", f"{watermark}\n".encode())
    return keys


# -- an S3 bucket: moto's server on 127.0.0.1, as tests/test_spark_remote.py starts it ----------------
S3_ENV = {"AWS_ACCESS_KEY_ID": "testing", "AWS_SECRET_ACCESS_KEY": "testing", "AWS_REGION": "us-east-1"}


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


@contextmanager
def moto_s3(buckets=("tier",)):
    """An S3-compatible server (moto) on 127.0.0.1 with ``buckets`` created, the environment pointing
    at it (``AWS_ENDPOINT_URL``, test credentials) for the block; yields the endpoint.  The server is
    stopped by its pid when the block ends."""
    port = _free_port()
    proc = subprocess.Popen([sys.executable, "-m", "moto.server", "-H", "127.0.0.1", "-p", str(port)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, start_new_session=True)
    saved = {k: os.environ.get(k) for k in (*S3_ENV, "AWS_ENDPOINT_URL")}
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                if time.monotonic() > deadline or proc.poll() is not None:
                    raise RuntimeError("the S3 server did not start")
                time.sleep(0.2)
        endpoint = f"http://127.0.0.1:{port}"
        os.environ.update(S3_ENV, AWS_ENDPOINT_URL=endpoint)
        fs = pafs.S3FileSystem(access_key="testing", secret_key="testing", region="us-east-1", scheme="http",
                               endpoint_override=f"127.0.0.1:{port}", allow_bucket_creation=True)
        for b in buckets:
            fs.create_dir(b)
        yield endpoint
    finally:
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGTERM)
            try:
                proc.wait(timeout=20)
            except subprocess.TimeoutExpired:
                os.killpg(proc.pid, signal.SIGKILL)
                proc.wait(timeout=10)
