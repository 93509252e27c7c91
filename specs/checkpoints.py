"""The text files of a partition dir and a log dir (Kafka's CheckpointFile and friends).

A checkpoint file is: a version line, an entry-count line, then one entry per line with fields
separated by a single space. Each :class:`TextCheckpoint` below declares its version and fields;
``parse`` and ``build`` are the only reader and writer of these files in the project.
"""
from __future__ import annotations

from dataclasses import dataclass

from .errors import KafkaFormatError


@dataclass(frozen=True)
class TextCheckpoint:
    name: str
    version: int
    fields: tuple[tuple[str, type], ...]

    def parse(self, text: str, *, file: str | None = None) -> list[dict]:
        lines = text.split("\n")
        if lines and lines[-1] == "":
            lines.pop()

        def bad(lineno: int, detail: str) -> KafkaFormatError:
            return KafkaFormatError("checkpoint", f"line {lineno}: {detail}", file=file)

        if not lines:  # Kafka's CheckpointReadBuffer: an empty file holds no entries (CheckpointFile
            return []  # creates the file empty when it opens one: a broker whose cleaner never ran leaves it so)
        try:
            version = int(lines[0])
        except ValueError:
            raise bad(1, f"version {lines[0]!r} is not a number") from None
        if version != self.version:
            raise bad(1, f"unsupported version {version} (expected {self.version})")
        if len(lines) == 1:  # a version line and nothing else: no entries, as Kafka reads it
            return []
        try:
            count = int(lines[1])
        except ValueError:
            raise bad(2, f"entry count {lines[1]!r} is not a number") from None
        if count < 0:
            raise bad(2, f"negative entry count {count}")
        body = lines[2:]
        if len(body) != count:
            raise bad(2, f"expected {count} entries but found {len(body)}")
        out = []
        for i, line in enumerate(body, start=3):
            parts = line.split(" ")
            if len(parts) != len(self.fields):
                raise bad(i, f"expected {len(self.fields)} fields, found {len(parts)}: {line!r}")
            entry = {}
            for (fname, ftype), raw in zip(self.fields, parts):
                try:
                    entry[fname] = ftype(raw)
                except ValueError:
                    raise bad(i, f"{fname} {raw!r} is not a {ftype.__name__}") from None
            out.append(entry)
        return out

    def build(self, entries: list[dict]) -> str:
        lines = [str(self.version), str(len(entries))]
        lines += [" ".join(str(e[f]) for f, _ in self.fields) for e in entries]
        return "\n".join(lines) + "\n"


#: recovery-point-offset-checkpoint, replication-offset-checkpoint, log-start-offset-checkpoint,
#: cleaner-offset-checkpoint: "topic partition offset" lines.
OffsetCheckpoint = TextCheckpoint("offset-checkpoint", 0, (("topic", str), ("partition", int), ("offset", int)))
#: leader-epoch-checkpoint: "epoch startOffset" lines.
LeaderEpochCheckpoint = TextCheckpoint("leader-epoch-checkpoint", 0, (("epoch", int), ("startOffset", int)))

OFFSET_CHECKPOINT_FILES = ("recovery-point-offset-checkpoint", "replication-offset-checkpoint",
                           "log-start-offset-checkpoint", "cleaner-offset-checkpoint")
LEADER_EPOCH_FILE = "leader-epoch-checkpoint"
PARTITION_METADATA_FILE = "partition.metadata"
META_PROPERTIES_FILE = "meta.properties"


def parse_partition_metadata(text: str, *, file: str | None = None) -> dict:
    """partition.metadata: ``version: 0`` then ``topic_id: <base64 uuid>``."""
    out = {}
    for i, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        key, sep, value = line.partition(":")
        if not sep:
            raise KafkaFormatError("checkpoint", f"line {i}: expected 'key: value', got {line!r}", file=file)
        out[key.strip()] = value.strip()
    if out.get("version") != "0" or "topic_id" not in out:
        raise KafkaFormatError("checkpoint", "expected 'version: 0' and a 'topic_id'", file=file)
    return {"version": 0, "topicId": out["topic_id"]}


def build_partition_metadata(topic_id: str) -> str:
    """As Kafka writes it (PartitionMetadataFileFormatter.toFile, 2.8+): no newline after the topic
    id, 43 bytes."""
    return f"version: 0\ntopic_id: {topic_id}"


def parse_properties(text: str) -> dict:
    """meta.properties (Java properties, the simple subset Kafka writes)."""
    out = {}
    for line in text.splitlines():
        s = line.strip()
        if not s or s[0] in "#!":
            continue
        for sep in ("=", ":"):
            if sep in s:
                k, _, v = s.partition(sep)
                out[k.strip()] = v.strip()
                break
    return out


def build_properties(props: dict) -> str:
    return "".join(f"{k}={v}\n" for k, v in props.items())
