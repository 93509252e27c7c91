"""Issue 56: the schema store read offline (the log dir's ``_schemas`` topic, an exported dir, a
registry over HTTP) and Confluent-framed values decoded equal to what confluent-kafka's own
deserializers return."""
from __future__ import annotations

import base64
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

pytest.importorskip("confluent_kafka.schema_registry.protobuf", reason="confluent-kafka's serializers build the fixtures")

from tests.schema_fixtures import build_log_dir, deserialized  # noqa: E402

from kafkaforensics.log.schema_topic import load_schema_store  # noqa: E402
from kafkaforensics.records.framing import message_indexes, unframe  # noqa: E402
from kafkaforensics.records.schema_decode import SchemaDecoder  # noqa: E402
from kafkaforensics.records.schemas import SchemaSourceError, SchemaStore, store_from_dir  # noqa: E402

GOOD = [("users", 0), ("users", 1), ("users", 2), ("users", 3), ("orders", 0), ("payments", 0),
        ("payments", 1), ("clicks", 0), ("legacy", 0)]


@pytest.fixture(scope="module")
def fx(tmp_path_factory):
    d = str(tmp_path_factory.mktemp("schemas") / "logs")
    f = build_log_dir(d)
    f.log_dir = d
    return f


def test_values_decode_as_the_deserializers_return_them(fx):
    dec = SchemaDecoder(load_schema_store([fx.log_dir]))
    for topic, i in GOOD:
        raw = fx.raw[topic][i]
        got = dec.decode(raw, topic)
        assert got.error is None, (topic, i, got.error)
        assert got.value == deserialized(fx, topic, raw), (topic, i)
        assert got.subject == f"{topic}-value"
    assert dec.decode(fx.raw["users"][2], "users").version == 2   # evolution: v2 under its own id


def test_bad_values_are_errors_not_exceptions(fx):
    dec = SchemaDecoder(load_schema_store([fx.log_dir]))
    unknown = dec.decode(fx.raw["users"][4], "users")
    assert unknown.unknown_id and unknown.schema_id == 9999
    bad = dec.decode(fx.raw["users"][5], "users")
    assert bad.schema_id == fx.v1_id and "does not decode under schema id" in bad.error
    assert not dec.decode(fx.raw["users"][6], "users").framed
    assert "fails its schema" in dec.decode(fx.raw["clicks"][1], "clicks").error
    # an offset commit key (version 1, group "abc"...) starts with 0x00 too: internal topics are never decoded
    assert not dec.decode(b"\x00\x01\x00\x03abc\x00\x01t\x00\x00\x00\x00", "__consumer_offsets").framed


def test_store_honours_deletes_config_and_mode(fx):
    store = load_schema_store([os.path.join(fx.log_dir, "users-0")])  # a data partition finds its sibling
    assert store.subject_soft_deleted("legacy-value", 1)
    assert not store.subject_soft_deleted("users-value", 1)
    assert store.config[None] == {"compatibilityLevel": "BACKWARD"} and store.mode[None] == {"mode": "READWRITE"}
    store.apply({"keytype": "SCHEMA", "subject": "users-value", "version": 1, "magic": 1}, None)  # tombstone
    assert store.get(fx.v1_id).state("users-value", 1) == "hard-deleted"
    store.apply({"keytype": "CONFIG", "subject": None, "magic": 0}, None)
    assert None not in store.config


def test_references_resolved_and_missing_reference_is_an_error():
    store = SchemaStore()
    store.add({"id": 2, "subject": "o", "version": 1, "schema": json.dumps(
        {"type": "record", "name": "O", "fields": [{"name": "a", "type": "A"}]}),
        "references": [{"name": "A", "subject": "a", "version": 1}]})
    got = SchemaDecoder(store).decode(b"\x00\x00\x00\x00\x02\x02", "o")
    assert "reference A" in got.error
    store.add({"id": 1, "subject": "a", "version": 1, "schema": json.dumps(
        {"type": "record", "name": "A", "fields": [{"name": "n", "type": "int"}]})})
    assert SchemaDecoder(store).decode(b"\x00\x00\x00\x00\x02\x02", "o").value == {"a": {"n": 1}}


def test_exported_dir_and_base64_protobuf(fx, tmp_path):
    """An exported dir of registry responses; Protobuf as the base64 descriptor confluent-kafka-python
    registers (the log dir's topic holds the .proto text)."""
    rows = []
    for subject in fx.client.get_subjects():
        for v in fx.client.get_versions(subject):
            rs = fx.client.get_version(subject, v)
            rows.append({"subject": subject, "version": v, "id": rs.schema_id, "schema": rs.schema.schema_str,
                         "schemaType": rs.schema.schema_type or "AVRO",
                         "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                                        for r in rs.schema.references or []]})
    (tmp_path / "schemas.json").write_text(json.dumps(rows))
    dec = SchemaDecoder(store_from_dir(str(tmp_path)))
    for topic, i in GOOD:
        raw = fx.raw[topic][i]
        assert dec.decode(raw, topic).value == deserialized(fx, topic, raw), (topic, i)
    with pytest.raises(SchemaSourceError):
        store_from_dir(str(tmp_path / "nope"))


def _serve(fx):
    client = fx.client

    class H(BaseHTTPRequestHandler):
        def do_GET(self):  # noqa: N802
            parts = self.path.strip("/").split("/")
            try:
                if parts[:2] == ["schemas", "ids"]:
                    s = client.get_schema(int(parts[2]))
                    body = {"schema": s.schema_str, "schemaType": s.schema_type or "AVRO",
                            "references": [{"name": r.name, "subject": r.subject, "version": r.version}
                                           for r in s.references or []]}
                else:
                    rs = client.get_version(parts[1], int(parts[3]))
                    body = {"subject": rs.subject, "version": rs.version, "id": rs.schema_id,
                            "schema": rs.schema.schema_str, "schemaType": rs.schema.schema_type or "AVRO"}
            except Exception:  # noqa: BLE001 - the mock's not-found
                self.send_response(404)
                self.end_headers()
                return
            data = json.dumps(body).encode()
            self.send_response(200)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def log_message(self, *a):
            pass

    srv = ThreadingHTTPServer(("127.0.0.1", 0), H)
    threading.Thread(target=srv.serve_forever, daemon=True).start()
    return srv


def test_registry_url(fx, tmp_path):
    srv = _serve(fx)
    try:
        store = load_schema_store([str(tmp_path)], registry_url=f"http://127.0.0.1:{srv.server_port}")
        dec = SchemaDecoder(store)
        for topic, i in GOOD:
            raw = fx.raw[topic][i]
            assert dec.decode(raw, topic).value == deserialized(fx, topic, raw), (topic, i)
        assert dec.decode(fx.raw["users"][4], "users").unknown_id
    finally:
        srv.shutdown()
    with pytest.raises(SchemaSourceError, match="schema registry"):
        load_schema_store([], registry_url=f"http://127.0.0.1:{srv.server_port}").get(1)
    with pytest.raises(SchemaSourceError, match="not an http"):
        load_schema_store([], registry_url="ftp://x")


def test_framing_and_message_indexes():
    assert unframe(b"\x01\x00\x00\x00\x01x") is None and unframe(b"\x00\x00") is None
    fr = unframe(b"\x00\x00\x00\x01\x00\x00rest")
    assert fr.schema_id == 256 and message_indexes(fr.body) == ([0], b"rest")
    assert message_indexes(bytes([4, 2, 4]) + b"m") == ([1, 2], b"m")    # zigzag: count 2, then 1 and 2
    with pytest.raises(ValueError):
        message_indexes(bytes([4, 2]))


# -- kfx dump --decode ---------------------------------------------------------------------------------
def _json_records(out: str) -> list:
    recs = []
    for line in out.splitlines():
        obj = json.loads(line)
        recs.extend(obj.get("records") or [])
    return recs


def test_dump_decode_json_beside_raw_bytes(fx, kfx):
    for topic, expect_rc in (("payments", 0), ("users", 1), ("orders", 0), ("clicks", 1)):
        r = kfx("dump", "--decode", "--format", "json", os.path.join(fx.log_dir, f"{topic}-0"))
        assert r.exit_code == expect_rc, (topic, r.output)
        recs = _json_records(r.stdout)
        assert len(recs) == len(fx.raw[topic])
        for i, rec in enumerate(recs):
            raw = fx.raw[topic][i]
            assert base64.b64decode(rec["value"]) == raw            # the raw bytes stay
            if (topic, i) in GOOD:
                assert rec["valueDecoded"]["value"] == deserialized(fx, topic, raw)
                assert rec["valueDecoded"]["subject"] == f"{topic}-value"
    r = kfx("dump", "--decode", "--format", "json", os.path.join(fx.log_dir, "users-0"))
    recs = _json_records(r.stdout)
    assert "valueDecoded" not in recs[6]                             # not framed: raw only
    assert "schema-unknown-id" in r.stderr and "(offset 4)" in r.stderr and "producerId 7" in r.stderr
    assert "schema-undecodable" in r.stderr and "(offset 5)" in r.stderr


def test_dump_decode_text(fx, kfx):
    r = kfx("dump", "--decode", "--encoding", "hex", os.path.join(fx.log_dir, "orders-0"))
    assert r.exit_code == 0
    line = next(ln for ln in r.stdout.splitlines() if ln.startswith("| offset: 0"))
    assert f"payload: {fx.raw['orders'][0].hex()}" in line
    got = json.loads(line.split(" valueDecoded: ", 1)[1])
    assert got["value"] == {"id": 7, "ship_to": {"city": "Oslo"}}


def test_dump_decode_without_schemas_is_usage_error(kfx, tmp_path):
    from tests.schema_fixtures import write_topic
    write_topic(str(tmp_path), "t-0", [b"\x00\x00\x00\x00\x01x"])
    r = kfx("dump", "--decode", str(tmp_path / "t-0"))
    assert r.exit_code == 2 and "needs schemas" in r.stderr and "Traceback" not in r.output
    r = kfx("dump", "--decode", "--schemas", str(tmp_path / "missing"), str(tmp_path / "t-0"))
    assert r.exit_code == 2 and "not a directory of schemas" in r.stderr


# -- kfx analyze: the schema timeline ----------------------------------------------------------------
def test_analyze_schema_timeline_and_findings(fx, kfx, tmp_path):
    from kafkaforensics.inspect.analyzer import analyze
    rep = analyze([fx.log_dir])
    by = {(f.partition, f.kind): f for f in rep.findings if f.kind.startswith("schema-")}
    assert set(by) == {("users-0", "schema-unknown-id"), ("users-0", "schema-undecodable"),
                       ("users-0", "schema-mixed-framing"), ("clicks-0", "schema-undecodable"),
                       ("legacy-0", "schema-deleted-subject")}
    unknown = by[("users-0", "schema-unknown-id")]
    assert (unknown.first_offset, unknown.position is not None) == (4, True) and "producer 7" in unknown.explanation
    assert by[("users-0", "schema-undecodable")].first_offset == 5
    assert by[("users-0", "schema-mixed-framing")].first_offset == 6
    assert "producer 3" in by[("legacy-0", "schema-deleted-subject")].explanation
    assert all(f.remedy and "kfx recover" not in f.remedy for f in by.values())
    assert f"kfx dump --decode {os.path.join(fx.log_dir, 'users-0')} shows the record at offset 4" in unknown.remedy
    users = next(p for p in rep.partitions if p.partition == "users-0")
    spans = [(s["schemaId"], s["version"], s["firstOffset"], s["lastOffset"]) for s in users.schemas["spans"]]
    assert spans == [(fx.v1_id, 1, 0, 1), (fx.v1_id + 1, 2, 2, 3), (9999, None, 4, 4), (fx.v1_id, 1, 5, 5),
                     (None, None, 6, 6)]
    assert next(p for p in rep.partitions if p.partition == "_schemas-0").schemas is None
    html = tmp_path / "r.html"
    r = kfx("analyze", "--html", str(html), fx.log_dir)
    assert r.exit_code == 1 and "schema-unknown-id" in r.stdout
    assert (f"users-0 schemas: 6 framed, 1 unframed: id {fx.v1_id} (users-value v1) @ 0..1, id {fx.v1_id + 1} "
            f"(users-value v2) @ 2..3, id 9999 (unknown) @ 4..4") in r.stdout
    assert html.read_text().count("<h3>Schemas</h3>") == 6


def test_analyze_soft_delete_before_production_is_no_finding(tmp_path):
    """Values written before the registry soft-deleted their subject are not a finding."""
    from kafkaforensics.inspect.analyzer import analyze
    from tests.schema_fixtures import T0, schemas_records, write_topic, registry_client
    from confluent_kafka.schema_registry import Schema
    client = registry_client()
    sid = client.register_schema("old-value", Schema(json.dumps({"type": "string"}), "AVRO"))
    write_topic(str(tmp_path), "old-0", [b"\x00" + sid.to_bytes(4, "big") + b"\x02a"], t0=T0 - 10_000)
    recs = schemas_records(client, [({"keytype": "DELETE_SUBJECT", "subject": "old-value", "magic": 0},
                                     {"subject": "old-value", "version": 1})])
    write_topic(str(tmp_path), "_schemas-0", [v for _k, v in recs], keys=[k for k, _v in recs])
    rep = analyze([str(tmp_path)])
    assert not [f for f in rep.findings if f.kind.startswith("schema-")]
    store = load_schema_store([str(tmp_path)])
    assert store.subject_soft_deleted("old-value", 1) and store.deleted_at["old-value"] == T0 + 1000


# -- kfx explain --key with a decoded key ------------------------------------------------------------
def test_explain_decoded_key(fx, kfx):
    part = os.path.join(fx.log_dir, "accounts-0")
    r = kfx("explain", "--decode", "--key", '{"id": 1}', "--json", part)
    assert r.exit_code == 0, r.output
    assert [x["offset"] for x in json.loads(r.stdout)["results"]] == [0, 2]
    r = kfx("explain", "--key", '{"id": 1}', "--json", part)            # without --decode: raw bytes only
    assert r.exit_code == 1 and json.loads(r.stdout)["results"] == []
    r = kfx("explain", "--decode", "--key", '{"id": 3}', part)
    assert r.exit_code == 1 and "no record of key" in r.stdout


# -- the records level's decode option (the kafka_segments source, kfx scan --decode) -----------------
def _check_decode_columns(fx, rows):
    by = {(r["topic"], r["offset"]): r for r in rows}
    for topic, i in GOOD:
        r = by[(topic, i)]
        assert json.loads(r["valueDecoded"]) == deserialized(fx, topic, fx.raw[topic][i]), (topic, i)
        assert r["valueSubject"] == f"{topic}-value" and r["valueSchemaId"] == int.from_bytes(fx.raw[topic][i][1:5], "big")
        assert r["value"] == fx.raw[topic][i]                                   # the binary column as it is
    assert by[("users", 4)]["valueDecoded"] is None and by[("users", 4)]["valueSchemaId"] == 9999
    assert "not in the schema store" in by[("users", 4)]["valueDecodeError"]
    assert by[("users", 6)]["valueSchemaId"] is None and by[("users", 6)]["valueDecodeError"] is None
    assert json.loads(by[("accounts", 2)]["keyDecoded"]) == {"id": 1} and by[("accounts", 2)]["keySubject"] == "accounts-key"


def test_records_level_decode_without_spark(fx):
    """The no-Spark path (kfx scan of a small fleet reads so)."""
    from spark_jobs.planned_read import read_here
    table, _ = read_here([fx.log_dir], "records", options={"decode": "true"})
    _check_decode_columns(fx, table.to_pylist())
    plain, _ = read_here([fx.log_dir], "records")
    assert "valueDecoded" not in plain.column_names                            # decode is opt-in



def test_records_level_decode_needs_schemas(fx, tmp_path):
    import shutil
    from spark_jobs.planned_read import read_here
    shutil.copytree(os.path.join(fx.log_dir, "users-0"), tmp_path / "users-0")   # a log dir without _schemas
    with pytest.raises(ValueError, match="decode=true needs schemas"):
        read_here([str(tmp_path)], "records", options={"decode": "true"})


def test_scan_decode_cli(fx, kfx, tmp_path):
    import pyarrow.parquet as pq
    out = tmp_path / "out"
    r = kfx("scan", "--level", "records", "--decode", "--out", str(out), fx.log_dir)
    assert r.exit_code in (0, 1), r.output
    _check_decode_columns(fx, pq.read_table(str(out / "records")).to_pylist())
    r = kfx("scan", "--decode", "--out", str(tmp_path / "o2"), fx.log_dir)
    assert r.exit_code == 2 and "give --level records" in r.stderr


def test_records_level_decode_on_spark(fx):
    """The Spark path: the kafka_segments source read by Spark (its reader, with the schemas, shipped
    to the Python workers)."""
    pytest.importorskip("pyspark", reason="pyspark is in the test dependencies (pip install -e '.[test]')")
    from spark_jobs.planned_read import read
    from spark_jobs.session import get_spark
    spark = get_spark("local[1]", app="kafkaforensics-tests-schemas")
    try:
        df = read(spark, [fx.log_dir], "records", options={"decode": "true"})
        assert {"keyDecoded", "valueDecoded", "valueSchemaId", "valueSubject"} <= set(df.columns)
        _check_decode_columns(fx, [r.asDict() for r in df.collect()])
    finally:
        spark.stop()


COMMON_PROTO = 'syntax = "proto3";\npackage c;\n\nmessage Money {\n  int64 cents = 1;\n  string cur = 2;\n}\n'
SALE_PROTO = '''syntax = "proto3";
package t;

import "common.proto";
import "google/protobuf/timestamp.proto";

message Sale {
  c.Money price = 1;
  google.protobuf.Timestamp at = 2;
  optional string note = 3;
  oneof kind {
    int32 a = 4;
    string b = 5;
  }
}
'''


def _sale_class():
    """Sale (importing common.proto's Money and the well-known Timestamp), built from hand-made
    FileDescriptorProtos, not by kfx's parser."""
    from google.protobuf import descriptor_pb2, descriptor_pool, message_factory, timestamp_pb2
    F = descriptor_pb2.FieldDescriptorProto
    pool = descriptor_pool.DescriptorPool()
    ts = descriptor_pb2.FileDescriptorProto()
    timestamp_pb2.DESCRIPTOR.CopyToProto(ts)
    pool.Add(ts)
    common = descriptor_pb2.FileDescriptorProto(name="common.proto", package="c", syntax="proto3")
    money = common.message_type.add(name="Money")
    money.field.add(name="cents", number=1, type=F.TYPE_INT64, label=F.LABEL_OPTIONAL)
    money.field.add(name="cur", number=2, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL)
    pool.Add(common)
    sale_fd = descriptor_pb2.FileDescriptorProto(name="sale.proto", package="t", syntax="proto3",
                                                 dependency=["common.proto", "google/protobuf/timestamp.proto"])
    sale = sale_fd.message_type.add(name="Sale")
    sale.field.add(name="price", number=1, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL, type_name=".c.Money")
    sale.field.add(name="at", number=2, type=F.TYPE_MESSAGE, label=F.LABEL_OPTIONAL,
                   type_name=".google.protobuf.Timestamp")
    sale.field.add(name="note", number=3, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, proto3_optional=True,
                   oneof_index=1)
    sale.field.add(name="a", number=4, type=F.TYPE_INT32, label=F.LABEL_OPTIONAL, oneof_index=0)
    sale.field.add(name="b", number=5, type=F.TYPE_STRING, label=F.LABEL_OPTIONAL, oneof_index=0)
    sale.oneof_decl.add(name="kind")
    sale.oneof_decl.add(name="_note")
    pool.Add(sale_fd)
    return message_factory.GetMessageClass(pool.FindMessageTypeByName("t.Sale"))


def test_protobuf_references_from_proto_text(tmp_path):
    """A Protobuf schema whose .proto text imports a referenced schema and a well-known type,
    serialized by confluent-kafka's ProtobufSerializer (which registers the reference)."""
    from confluent_kafka.schema_registry.protobuf import ProtobufDeserializer, ProtobufSerializer
    from confluent_kafka.serialization import MessageField, SerializationContext
    from google.protobuf import json_format
    from tests.schema_fixtures import registry_client, schemas_records, write_topic
    client = registry_client()
    Sale = _sale_class()
    ctx = SerializationContext("sales", MessageField.VALUE)
    ser = ProtobufSerializer(Sale, client, {"use.deprecated.format": False})
    msgs = [Sale(note="x", b="y"), Sale(a=3)]
    msgs[0].price.cents, msgs[0].price.cur = 5, "EUR"
    msgs[0].at.seconds = 10
    values = [ser(m, ctx) for m in msgs]
    recs = []
    for k, v in schemas_records(client):   # the .proto text the Java registry stores
        obj = json.loads(v)
        obj["schema"] = COMMON_PROTO if obj["subject"] == "common.proto" else SALE_PROTO
        recs.append((k, json.dumps(obj).encode()))
    assert any(json.loads(v).get("references") for _k, v in recs)
    write_topic(str(tmp_path), "_schemas-0", [v for _k, v in recs], keys=[k for k, _v in recs])
    write_topic(str(tmp_path), "sales-0", values)
    dec = SchemaDecoder(load_schema_store([str(tmp_path)]))
    deser = ProtobufDeserializer(Sale, {"use.deprecated.format": False}, client)
    for raw in values:
        got = dec.decode(raw, "sales")
        assert got.error is None, got.error
        assert got.value == json_format.MessageToDict(deser(raw, ctx), preserving_proto_field_name=True)


def test_json_schema_reference_and_id_named_export(tmp_path):
    """A JSON Schema ``$ref`` to a referenced schema by its name; schema files named by id."""
    (tmp_path / "1.schema.json").write_text(json.dumps({"type": "object", "properties": {"n": {"type": "integer"}},
                                                         "required": ["n"]}))
    (tmp_path / "3.avsc").write_text(json.dumps({"type": "array", "items": "int"}))
    store = store_from_dir(str(tmp_path))
    store.add({"id": 2, "subject": "w-value", "version": 1, "schemaType": "JSON",
               "references": [{"name": "inner.json", "subject": "inner", "version": 1}],
               "schema": json.dumps({"type": "object", "properties": {"inner": {"$ref": "inner.json"}}})})
    store.add({"id": 1, "subject": "inner", "version": 1, "schemaType": "JSON", "schema": store.get(1).schema})
    dec = SchemaDecoder(store)
    assert dec.decode(b"\x00\x00\x00\x00\x02" + b'{"inner": {"n": 1}}', "w").error is None
    assert "fails its schema" in dec.decode(b"\x00\x00\x00\x00\x02" + b'{"inner": {"n": "x"}}', "w").error
    assert dec.decode(b"\x00\x00\x00\x00\x03\x04\x02\x04\x00", "a").value == [1, 2]


def test_a_segment_file_finds_its_log_dir_schemas(fx, kfx):
    seg = os.path.join(fx.log_dir, "orders-0", "00000000000000000000.log")
    r = kfx("dump", "--decode", "--format", "json", seg)
    assert r.exit_code == 0, r.output
    assert _json_records(r.stdout)[0]["valueDecoded"]["value"] == {"id": 7, "ship_to": {"city": "Oslo"}}


def test_a_scan_that_decodes_nothing_loads_no_protobuf():
    """Issue 57 (a scan's cost): the kafka_segments source imports the schema decoder, whose Protobuf
    half (protobuf, the .proto parser: 45-110 ms of every `kfx scan`) only ``decode`` uses; importing
    the source loads neither, and a .proto schema still parses once asked (the tests above)."""
    import subprocess
    import sys
    code = ("import sys, kafkaforensics.spark.spark_source, cli.commands.scan; "
            "print(sorted(m for m in sys.modules if m.startswith(('google.protobuf', 'proto_schema_parser'))))")
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    out = subprocess.run([sys.executable, "-c", code], cwd=root, capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=root))
    assert out.stdout.strip() == "[]", out.stdout
