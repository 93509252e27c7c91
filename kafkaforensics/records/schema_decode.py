"""Confluent-framed keys and values decoded with a :class:`~.schemas.SchemaStore`: Avro with
fastavro, Protobuf with protobuf (the registry's ``.proto`` text parsed by proto-schema-parser into
a ``FileDescriptorProto``), JSON Schema payloads parsed as JSON and validated with jsonschema.

A decoded value is made JSON-safe (bytes as base64, decimals and UUIDs as strings, dates and times
in ISO 8601), the form ``kfx dump --decode``, ``kfx scan --decode`` and the report show.
"""
from __future__ import annotations

import base64
import datetime
import decimal
import io
import json
import uuid
from dataclasses import dataclass

from kafkaforensics.records.framing import message_indexes, unframe
from kafkaforensics.records import proto_schema
from kafkaforensics.records.schemas import SchemaSourceError
from specs.lazy import lazy

fastavro = lazy("fastavro", globals())
jsonschema = lazy("jsonschema", globals())
referencing = lazy("referencing", globals())
referencing_jsonschema = lazy("referencing.jsonschema", globals())
json_format = lazy("google.protobuf.json_format", globals())
message_factory = lazy("google.protobuf.message_factory", globals())


#: Kafka's internal topics are named so; their keys (a version int16 first: 0x00 ...) are no framing
INTERNAL_TOPIC_PREFIX = "__"


@dataclass
class Decoded:
    """What a key or value decodes to: ``framed`` False for bytes without Confluent's framing (then
    nothing else is set); ``value`` the JSON-safe value; ``error`` why it did not decode (``value``
    may still be set when what is wrong comes after it: trailing bytes, a failed validation)."""
    framed: bool
    schema_id: int | None = None
    schema_type: str | None = None
    subject: str | None = None
    version: int | None = None
    value: object = None
    error: str | None = None
    unknown_id: bool = False

    def to_json(self) -> dict:
        out = {"schemaId": self.schema_id, "subject": self.subject, "version": self.version,
               "schemaType": self.schema_type, "value": self.value}
        if self.error is not None:
            out["error"] = self.error
        return out


def jsonable(v):
    """A decoded value as JSON types (bytes: base64)."""
    if isinstance(v, dict):
        return {str(k): jsonable(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [jsonable(x) for x in v]
    if isinstance(v, (bytes, bytearray, memoryview)):
        return base64.b64encode(bytes(v)).decode()
    if isinstance(v, (decimal.Decimal, uuid.UUID)):
        return str(v)
    if isinstance(v, (datetime.date, datetime.time)):
        return v.isoformat()
    return v


class SchemaDecoder:
    """Decodes framed bytes by the store's schemas; each schema is parsed once."""

    def __init__(self, store):
        self.store = store
        self._parsed: dict[int, object] = {}

    def __getstate__(self):
        """Shipped to Spark's tasks without the parsed schemas (each task parses its own)."""
        return {"store": self.store, "_parsed": {}}

    def columns(self, topics, keys, values) -> dict[str, list]:
        """The records level's decode columns (``keyDecoded``, ``keySchemaId``, ``keySubject``,
        ``keyDecodeError``, the same for the value) of rows given as their topics, keys and values."""
        out: dict[str, list] = {f"{side}{c}": [] for side in ("key", "value") for c in ("Decoded", "SchemaId", "Subject", "DecodeError")}
        for topic, key, value in zip(topics, keys, values):
            for side, data in (("key", key), ("value", value)):
                d = self.decode(data, topic, side == "key")
                ok = d.framed and d.error is None
                out[side + "Decoded"].append(json.dumps(d.value) if ok else None)
                out[side + "SchemaId"].append(d.schema_id)
                out[side + "Subject"].append(d.subject)
                out[side + "DecodeError"].append(d.error)
        return out

    def decode(self, data: bytes | None, topic: str | None = None, is_key: bool = False) -> Decoded:
        """Decode one key or value; never raises for bad bytes (the reason is ``error``).  Kafka's
        internal topics (``__consumer_offsets``, ...) hold no Confluent framing: never decoded."""
        fr = None if topic is not None and topic.startswith(INTERNAL_TOPIC_PREFIX) else unframe(data)
        if fr is None:
            return Decoded(False)
        try:
            schema = self.store.get(fr.schema_id)
        except SchemaSourceError as e:  # a registry that stopped answering: this value is not decoded
            return Decoded(True, fr.schema_id, error=str(e))
        if schema is None:
            return Decoded(True, fr.schema_id, error=f"schema id {fr.schema_id} is not in the schema store",
                           unknown_id=True)
        subject, version = schema.subject_for(topic, is_key)
        out = Decoded(True, fr.schema_id, schema.schema_type, subject, version)
        try:
            parsed = self._parse(schema)
            out.value, out.error = _DECODERS[schema.schema_type](parsed, fr.body)
        except Exception as e:  # noqa: BLE001 - any library's complaint about the bytes is the finding
            out.error = f"{schema.schema_type} payload does not decode under schema id {fr.schema_id}: {_reason(e)}"
        return out

    def _parse(self, schema):
        """The parsed form of a schema (cached; a schema that does not parse raises ValueError)."""
        if schema.id not in self._parsed:
            try:
                self._parsed[schema.id] = _PARSERS[schema.schema_type](schema, self.store)
            except KeyError:
                raise ValueError(f"schema type {schema.schema_type} is not one kfx decodes") from None
            except Exception as e:  # noqa: BLE001
                self._parsed[schema.id] = e
        got = self._parsed[schema.id]
        if isinstance(got, Exception):
            raise ValueError(f"schema id {schema.id} does not parse ({_reason(got)})")
        return got


def _reason(e: Exception) -> str:
    text = str(e).strip().splitlines()
    return f"{type(e).__name__}: {text[0]}" if text else type(e).__name__


def _references(schema, store, seen=None) -> list:
    """The schemas ``schema`` references, depth first (a reference's references before it)."""
    seen = set() if seen is None else seen
    out = []
    for ref in schema.references:
        dep = store.reference(ref)
        if dep is None:
            raise ValueError(f"reference {ref.get('name')} ({ref.get('subject')} v{ref.get('version')}) "
                             "is not in the schema store")
        if dep.id in seen:
            continue
        seen.add(dep.id)
        out.extend(_references(dep, store, seen))
        out.append((ref.get("name"), dep))
    return out


# -- Avro ------------------------------------------------------------------------------------------
def _parse_avro(schema, store):
    """An Avro schema parsed by fastavro, its references' named types parsed into it first."""
    named: dict = {}
    for _name, dep in _references(schema, store):
        fastavro.parse_schema(json.loads(dep.schema), named)
    return fastavro.parse_schema(json.loads(schema.schema), named)


def _decode_avro(parsed, body: bytes):
    """(value, error) of an Avro body: the schemaless datum, and bytes left after it as an error."""
    buf = io.BytesIO(body)
    value = jsonable(fastavro.schemaless_reader(buf, parsed, None))
    left = len(body) - buf.tell()
    return value, (f"{left} bytes left after the Avro value" if left else None)


# -- JSON Schema ------------------------------------------------------------------------------------
def _parse_json_schema(schema, store):
    """A jsonschema validator for the schema, its references registered by their names."""
    doc = json.loads(schema.schema)
    cls = jsonschema.validators.validator_for(doc)
    spec = referencing_jsonschema.specification_with(cls.META_SCHEMA["$schema"])  # a reference without $schema: the schema's dialect
    resources = [(name, referencing.Resource.from_contents(json.loads(dep.schema), default_specification=spec))
                 for name, dep in _references(schema, store)]
    return cls(doc, registry=referencing.Registry().with_resources(resources))


def _decode_json(validator, body: bytes):
    """(value, error) of a JSON body: the parsed value, and the first validation error."""
    value = json.loads(body)
    err = next(iter(validator.iter_errors(value)), None)
    return value, (None if err is None else f"JSON value fails its schema: {err.message}")


# -- Protobuf ---------------------------------------------------------------------------------------
def _parse_protobuf(schema, store):
    """The schema's FileDescriptor (:mod:`.proto_schema`), references first."""
    deps = [(name, dep.schema) for name, dep in _references(schema, store)]
    return proto_schema.file_descriptor(schema.schema, deps, name=f"kfx_schema_{schema.id}.proto")


def _decode_protobuf(fd, body: bytes):
    """(value, error) of a Protobuf body: the message the index list names, as protobuf's JSON
    mapping with the .proto field names; fields the schema does not define as an error."""
    idx, msg_bytes = message_indexes(body)
    desc = proto_schema.message_at(fd, idx)
    msg = message_factory.GetMessageClass(desc)()
    msg.ParseFromString(msg_bytes)
    value = json_format.MessageToDict(msg, preserving_proto_field_name=True)
    unknown = proto_schema.unknown_field_count(msg)
    return value, (f"{unknown} fields the schema does not define" if unknown else None)


_PARSERS = {"AVRO": _parse_avro, "JSON": _parse_json_schema, "PROTOBUF": _parse_protobuf}
_DECODERS = {"AVRO": _decode_avro, "JSON": _decode_json, "PROTOBUF": _decode_protobuf}
