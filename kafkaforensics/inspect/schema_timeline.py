"""The schema timeline of ``kfx analyze`` (issue 56): per data topic partition, which schema ids and
versions its values carry over which offsets and times, and findings for what a registry-backed
consumer would trip on: an id the schema store does not hold, a payload that does not decode under
its id (the wrong schema, a poison pill), a subject soft-deleted in the registry while still produced,
and Confluent framing on some values but not on others.
"""
from __future__ import annotations

from dataclasses import dataclass, field

from kafkaforensics.errors import KafkaFormatError

#: spans kept per partition for the report (the findings count every record regardless)
MAX_SPANS = 500


@dataclass
class _Group:
    """Records of one finding: first/last offset, count, the first batch (its file and position),
    producer ids and the first reason."""
    first: int
    last: int
    batch: object
    why: str
    count: int = 0
    producers: set = field(default_factory=set)

    def take(self, offset: int, producer_id: int) -> None:
        self.last, self.count = offset, self.count + 1
        if producer_id >= 0:
            self.producers.add(producer_id)

    def producers_text(self) -> str:
        return ", ".join(str(p) for p in sorted(self.producers)) or "none (idempotence off)"


class SchemaTimeline:
    """Fed a partition's batches (:meth:`batch`), then :meth:`finish` adds its findings through an
    ``add(kind, severity, first, last, batch, explanation)`` callable and returns the timeline."""

    def __init__(self, decoder, topic: str):
        self.decoder, self.topic = decoder, topic
        self.spans: list[dict] = []
        self.framed = self.unframed = 0
        self.unframed_group: _Group | None = None
        self.groups: dict[tuple, _Group] = {}   # (kind, schema id or subject, producer) -> group

    def batch(self, b) -> None:
        """Decode the values of one data batch (control batches and null values are not values)."""
        if b.is_control or not b.crc_valid():
            return
        try:
            recs = b.records()
        except KafkaFormatError:
            return  # damage: verify's and the analysis's to report
        for r in recs:
            if r.value is not None:
                self._record(b, r)

    def _record(self, b, r) -> None:
        """One value: its span, and the finding group it belongs to, if any."""
        d = self.decoder.decode(r.value, self.topic)
        pid = b.producer_id if b.magic >= 2 else -1
        if not d.framed:
            self.unframed += 1
            if self.unframed_group is None:
                self.unframed_group = _Group(r.offset, r.offset, b, "")
            self.unframed_group.take(r.offset, pid)
            self._span(None, None, None, r)
            return
        self.framed += 1
        self._span(d.schema_id, d.subject, d.version, r)
        if d.error is not None:
            kind = "schema-unknown-id" if d.unknown_id else "schema-undecodable"
            self._group((kind, d.schema_id, pid), r, b, d.error, pid)
        elif self.decoder.store.subject_soft_deleted(d.subject, d.version):
            deleted_at = self.decoder.store.deleted_at.get(d.subject)
            if deleted_at is None or r.timestamp >= deleted_at:
                self._group(("schema-deleted-subject", d.subject, pid), r, b, f"{d.subject} v{d.version}", pid)

    def _group(self, key, r, b, why, pid) -> None:
        g = self.groups.get(key)
        if g is None:
            g = self.groups[key] = _Group(r.offset, r.offset, b, why)
        g.take(r.offset, pid)

    def _span(self, sid, subject, version, r) -> None:
        """Extend the last span with the record, or start one (up to :data:`MAX_SPANS`)."""
        s = self.spans[-1] if self.spans else None
        if s is not None and s["schemaId"] == sid and s["version"] == version:
            s["lastOffset"], s["records"] = r.offset, s["records"] + 1
            s["lastTimestamp"] = max(s["lastTimestamp"], r.timestamp)
        elif len(self.spans) < MAX_SPANS:
            self.spans.append({"schemaId": sid, "subject": subject, "version": version, "firstOffset": r.offset,
                               "lastOffset": r.offset, "firstTimestamp": r.timestamp, "lastTimestamp": r.timestamp,
                               "records": 1})

    def finish(self, add) -> dict | None:
        """Add the findings; the timeline for the report (None when no value is framed)."""
        if not self.framed:
            return None
        for (kind, what, pid), g in self.groups.items():
            add(kind, "warning", g.first, g.last, g.batch, _explain(kind, what, g, self.decoder.store))
        if self.unframed_group is not None:
            g = self.unframed_group
            add("schema-mixed-framing", "warning", g.first, g.last, g.batch,
                f"{self.unframed} of {self.unframed + self.framed} values have no Confluent framing while "
                f"{self.framed} do (producers {g.producers_text()}): a registry-backed consumer fails on them")
        return {"framed": self.framed, "unframed": self.unframed, "spans": self.spans}


def _explain(kind: str, what, g: _Group, store) -> str:
    n = f"{g.count} value{'s' if g.count != 1 else ''}"
    who = f"producer {g.producers_text()}"
    if kind == "schema-unknown-id":
        return f"{n} framed with schema id {what}, which the schema store ({store.source}) does not hold ({who})"
    if kind == "schema-undecodable":
        return f"{n} from {who} not decoded (the wrong schema or a poison pill): {g.why}"
    return f"{n} of subject {what} produced after the registry soft-deleted it ({g.why}, {who})"


#: what to do about each schema finding ({see}: where to look at the record)
_REMEDIES = {
    "schema-unknown-id": "{see}; find the schema in a registry export or backup (--schemas DIR, --schema-registry URL): "
                         "consumers fail on this id until it is registered",
    "schema-undecodable": "{see}; find the producer (its id is above) writing with the wrong schema; consumers must "
                          "skip the record (a poison pill) or seek past it",
    "schema-deleted-subject": "the registry soft-deleted this subject while producers still used it: re-register the "
                              "schema or stop the producers; consumers that look up by subject fail",
    "schema-mixed-framing": "{see}; values without framing came from a producer without the registry's serializer: "
                            "consumers using a registry deserializer fail on them",
}


def schema_remedy(kind: str, partition_dir: str, offset: int | None) -> str:
    """One line saying what to do about a schema finding, with the partition dir and first offset."""
    see = f"kfx dump --decode {partition_dir} shows the record at offset {offset} beside its raw bytes"
    return _REMEDIES[kind].format(see=see)


def timeline_text(partition: str, tl: dict) -> str:
    """A partition's schema timeline as one line: counts, then each span's schema id (subject and
    version) and offsets."""
    spans = ", ".join(
        ("unframed" if sp["schemaId"] is None else f"id {sp['schemaId']}"
         + (f" ({sp['subject']} v{sp['version']})" if sp["subject"] else " (unknown)"))
        + f" @ {sp['firstOffset']}..{sp['lastOffset']}" for sp in tl["spans"])
    return f"{partition} schemas: {tl['framed']} framed, {tl['unframed']} unframed: {spans}"
