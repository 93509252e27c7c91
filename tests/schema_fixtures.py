"""Log dirs whose ``_schemas`` topic and data topics hold what a registry and Confluent's producers
write: the values are made by confluent-kafka's own serializers (AvroSerializer, ProtobufSerializer,
JSONSerializer) against its mock schema registry client, the ``_schemas`` records are the registry's
key/value JSON, and kfx's writer lays both out as partition dirs."""
from __future__ import annotations

import json
import os
from types import SimpleNamespace

from google.protobuf import descriptor_pb2, descriptor_pool, message_factory

from kafkaforensics.log.writer import write_partition
from kafkaforensics.records.builder import BatchProducer, build_v2

T0 = 1_700_000_000_000

AVRO_V1 = {"type": "record", "name": "User", "namespace": "kfx.test",
           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"}]}
AVRO_V2 = {"type": "record", "name": "User", "namespace": "kfx.test",
           "fields": [{"name": "name", "type": "string"}, {"name": "age", "type": "int"},
                      {"name": "email", "type": ["null", "string"], "default": None},
                      {"name": "avatar", "type": "bytes", "default": ""}]}
AVRO_ADDRESS = {"type": "record", "name": "Address", "namespace": "kfx.test",
                "fields": [{"name": "city", "type": "string"}]}
AVRO_ORDER = {"type": "record", "name": "Order", "namespace": "kfx.test",
              "fields": [{"name": "id", "type": "long"}, {"name": "ship_to", "type": "kfx.test.Address"}]}
ACCOUNT_KEY = {"type": "record", "name": "AccountKey", "namespace": "kfx.test",
               "fields": [{"name": "id", "type": "long"}]}
JSON_SCHEMA = {"$schema": "http://json-schema.org/draft-07/schema#", "title": "Click", "type": "object",
               "properties": {"page": {"type": "string"}, "ms": {"type": "integer"}},
               "required": ["page", "ms"]}
#: the .proto text of the Protobuf schema, what the Java registry stores for it
PROTO_TEXT = '''syntax = "proto3";
package kfx.test;

message Payment {
  string id = 1;
  int64 cents = 2;
  repeated string tags = 3;
  Detail detail = 4;
  map<string, int32> counts = 5;
  message Detail {
    string note = 1;
    Kind kind = 2;
  }
  enum Kind {
    CARD = 0;
    CASH = 1;
  }
}

message Refund {
  string payment_id = 1;
}
'''


def payment_classes():
    """Payment and Refund message classes built from a hand-made FileDescriptorProto (the same
    messages as PROTO_TEXT, built without kfx's parser)."""
    F = descriptor_pb2.FieldDescriptorProto
    fdp = descriptor_pb2.FileDescriptorProto(name="kfx/test/payment.proto", package="kfx.test", syntax="proto3")
    pay = fdp.message_type.add(name="Payment")
    pay.field.add(name="id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pay.field.add(name="cents", number=2, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    pay.field.add(name="tags", number=3, type=F.TYPE_STRING, label=F.LABEL_REPEATED)
    pay.field.add(name="detail", number=4, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                  type_name=".kfx.test.Payment.Detail")
    pay.field.add(name="counts", number=5, type=F.TYPE_MESSAGE, label=F.LABEL_REPEATED,
                  type_name=".kfx.test.Payment.CountsEntry")
    det = pay.nested_type.add(name="Detail")
    det.field.add(name="note", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    det.field.add(name="kind", number=2, type=F.TYPE_ENUM, label=F.LABEL_OPTIONAL, type_name=".kfx.test.Payment.Kind")
    ent = pay.nested_type.add(name="CountsEntry")
    ent.options.map_entry = True
    ent.field.add(name="key", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    ent.field.add(name="value", number=2, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL)
    kind = pay.enum_type.add(name="Kind")
    kind.value.add(name="CARD", number=0)
    kind.value.add(name="CASH", number=1)
    ref = fdp.message_type.add(name="Refund")
    ref.field.add(name="payment_id", number=1, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool = descriptor_pool.DescriptorPool()
    fd = pool.Add(fdp)
    fd = pool.FindFileByName(fdp.name)
    return (message_factory.GetMessageClass(fd.message_types_by_name["Payment"]),
            message_factory.GetMessageClass(fd.message_types_by_name["Refund"]))


def _rec(offset, value, key=None, t0=T0):
    return SimpleNamespace(offset=offset, timestamp=t0 + offset * 1000, key=key,
                           value=value, headers=(), attributes=0)


def write_topic(log_dir: str, name: str, values, *, producer_id: int = -1, keys=None, t0: int = T0) -> str:
    """One partition dir ``name`` holding ``values`` (one record a batch, a producer id on each)."""
    batches = []
    for i, v in enumerate(values):
        k = keys[i] if keys else None
        batches.append(build_v2([_rec(i, v, k, t0)], base_offset=i, producer=BatchProducer(
            producer_id, 0 if producer_id >= 0 else -1, i if producer_id >= 0 else -1)))
    return write_partition(os.path.join(log_dir, name), batches)


def schemas_records(client, extra=()) -> list[tuple[bytes, bytes | None]]:
    """The ``_schemas`` records a registry writes for what the mock client holds: one SCHEMA key and
    value per (subject, version), ids ascending, then ``extra`` (key dict, value dict or None)."""
    out = []
    rows = []
    for subject in client.get_subjects():
        for version in client.get_versions(subject):
            rs = client.get_version(subject, version)
            rows.append((rs.schema_id, subject, version, rs.schema))
    for sid, subject, version, schema in sorted(rows, key=lambda r: (r[0], r[1])):
        value = {"subject": subject, "version": version, "id": sid, "schema": schema.schema_str,
                 "deleted": False}
        if schema.schema_type and schema.schema_type != "AVRO":
            value["schemaType"] = schema.schema_type
        if schema.references:
            value["references"] = [{"name": r.name, "subject": r.subject, "version": r.version}
                                   for r in schema.references]
        out.append(({"keytype": "SCHEMA", "subject": subject, "version": version, "magic": 1}, value))
    out.extend(extra)
    return [(json.dumps(k).encode(), None if v is None else json.dumps(v).encode()) for k, v in out]


def registry_client():
    from confluent_kafka.schema_registry import SchemaRegistryClient
    return SchemaRegistryClient.new_client({"url": "mock://kfx-tests"})


def build_log_dir(log_dir: str, proto_as_text: bool = True) -> SimpleNamespace:
    """A log dir with ``_schemas-0`` and data topics produced with confluent-kafka's serializers:
    ``users-0`` (Avro, two versions, then a record under an unknown id, one whose payload is not its
    schema's, one without framing, from producer 7), ``orders-0`` (Avro with a reference),
    ``payments-0`` (Protobuf, a top-level and a second message), ``clicks-0`` (JSON Schema, one
    value failing its schema) and ``legacy-0`` (a subject soft-deleted while still produced).
    Returns the expected values by (topic, offset) as the deserializers return them."""
    from confluent_kafka.schema_registry import Schema, SchemaReference
    from confluent_kafka.schema_registry.avro import AvroSerializer
    from confluent_kafka.schema_registry.json_schema import JSONSerializer
    from confluent_kafka.schema_registry.protobuf import ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext

    client = registry_client()
    ctx = lambda t: SerializationContext(t, MessageField.VALUE)  # noqa: E731
    os.makedirs(log_dir, exist_ok=True)
    users1 = AvroSerializer(client, json.dumps(AVRO_V1))
    users2 = AvroSerializer(client, json.dumps(AVRO_V2))
    users = [users1({"name": "ann", "age": 31}, ctx("users")), users1({"name": "bob", "age": 40}, ctx("users")),
             users2({"name": "cy", "age": 22, "email": "cy@x", "avatar": b"\x00\xff"}, ctx("users")),
             users2({"name": "di", "age": 50, "email": None, "avatar": b""}, ctx("users"))]
    v1_id = int.from_bytes(users[0][1:5], "big")
    users += [b"\x00" + (9999).to_bytes(4, "big") + b"\x06abc\x02",      # an id no registry gave
              b"\x00" + v1_id.to_bytes(4, "big") + b"\xff\xff\xff",       # not a v1 payload
              b"plain text, no framing"]
    client.register_schema("kfx.test.Address", Schema(json.dumps(AVRO_ADDRESS), "AVRO"))
    order_schema = Schema(json.dumps(AVRO_ORDER), "AVRO",
                          [SchemaReference("kfx.test.Address", "kfx.test.Address", 1)])
    orders_ser = AvroSerializer(client, order_schema)
    orders = [orders_ser({"id": 7, "ship_to": {"city": "Oslo"}}, ctx("orders"))]
    Payment, Refund = payment_classes()
    pay_ser = ProtobufSerializer(Payment, client, {"use.deprecated.format": False})
    refund_ser = ProtobufSerializer(Refund, client, {"use.deprecated.format": False,
                                                     "auto.register.schemas": False, "use.latest.version": True})
    pay = Payment(id="p1", cents=1250, tags=["a", "b"], counts={"x": 3})
    pay.detail.note = "n"
    pay.detail.kind = 1
    payments = [pay_ser(pay, ctx("payments")), refund_ser(Refund(payment_id="p1"), ctx("payments"))]
    clicks_ser = JSONSerializer(json.dumps(JSON_SCHEMA), client)
    clicks = [clicks_ser({"page": "/", "ms": 12}, ctx("clicks"))]
    clicks_id = int.from_bytes(clicks[0][1:5], "big")
    clicks.append(b"\x00" + clicks_id.to_bytes(4, "big") + b'{"page": 5}')  # framed, fails its schema
    legacy = [AvroSerializer(client, json.dumps(AVRO_V1))(
        {"name": "old", "age": 99}, ctx("legacy"))]
    legacy_id = int.from_bytes(legacy[0][1:5], "big")
    key_ser = AvroSerializer(client, json.dumps(ACCOUNT_KEY))
    kctx = SerializationContext("accounts", MessageField.KEY)
    account_keys = [key_ser({"id": i}, kctx) for i in (1, 2, 1)]
    accounts = [AvroSerializer(client, '"string"')(v, ctx("accounts")) for v in ("open", "open", "closed")]
    extra = [({"keytype": "CONFIG", "subject": None, "magic": 0}, {"compatibilityLevel": "BACKWARD"}),
             ({"keytype": "MODE", "subject": None, "magic": 0}, {"mode": "READWRITE"}),
             ({"keytype": "SCHEMA", "subject": "legacy-value", "version": 1, "magic": 1},
              {"subject": "legacy-value", "version": 1, "id": legacy_id, "schema": json.dumps(AVRO_V1),
               "deleted": True}),
             ({"keytype": "DELETE_SUBJECT", "subject": "legacy-value", "magic": 0},
              {"subject": "legacy-value", "version": 1})]
    recs = schemas_records(client, extra)
    if proto_as_text:
        recs = [(k, _proto_text(v)) for k, v in recs]
    write_partition(os.path.join(log_dir, "_schemas-0"),
                    [build_v2([_rec(i, v, k)], base_offset=i) for i, (k, v) in enumerate(recs)])
    write_topic(log_dir, "users-0", users, producer_id=7)
    write_topic(log_dir, "orders-0", orders)
    write_topic(log_dir, "payments-0", payments)
    write_topic(log_dir, "clicks-0", clicks)
    write_topic(log_dir, "accounts-0", accounts, keys=account_keys)
    write_topic(log_dir, "legacy-0", legacy, producer_id=3, t0=T0 + 3_600_000)  # after the subject's deletion
    raw = {"users": users, "orders": orders, "payments": payments, "clicks": clicks, "legacy": legacy,
           "accounts": accounts, "account_keys": account_keys}
    return SimpleNamespace(client=client, raw=raw, classes=(Payment, Refund), v1_id=v1_id, legacy_id=legacy_id)


def _proto_text(v):
    """A Protobuf SCHEMA value with the .proto text the Java registry stores in place of the base64
    descriptor confluent-kafka-python registers."""
    if v is None:
        return v
    obj = json.loads(v)
    if obj.get("schemaType") == "PROTOBUF":
        obj["schema"] = PROTO_TEXT
    return json.dumps(obj).encode()


def deserialized(fx, topic: str, value: bytes):
    """What confluent-kafka's deserializer returns for a value, as the JSON kfx shows."""
    from confluent_kafka.schema_registry.avro import AvroDeserializer
    from confluent_kafka.schema_registry.json_schema import JSONDeserializer
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import json_format

    from kafkaforensics.records.schema_decode import jsonable
    ctx = SerializationContext(topic, MessageField.VALUE)
    if topic == "payments":
        cls = fx.classes[0] if value[5] == 0 else fx.classes[1]
        msg = ProtobufDeserializer(cls, {"use.deprecated.format": False}, fx.client)(value, ctx)
        return json_format.MessageToDict(msg, preserving_proto_field_name=True)
    if topic == "clicks":
        return JSONDeserializer(None, schema_registry_client=fx.client)(value, ctx)
    return jsonable(AvroDeserializer(fx.client)(value, ctx))
