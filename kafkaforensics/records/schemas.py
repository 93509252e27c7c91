"""A schema registry's schemas held offline: what the registry's ``_schemas`` topic says (its keys
and values applied in log order), an exported directory of schemas, or a registry asked over HTTP.

The ``_schemas`` records (confluentinc/schema-registry, ``io.confluent.kafka.schemaregistry.storage``):
keys are JSON with a ``keytype`` — ``SCHEMA`` (``subject``, ``version``; value: ``subject``,
``version``, ``id``, ``schema``, ``schemaType`` (absent for Avro), ``references`` (``name``,
``subject``, ``version``), ``deleted``: a soft delete), ``CONFIG`` (value ``compatibilityLevel``),
``MODE`` (value ``mode``), ``DELETE_SUBJECT`` (value ``subject``, ``version``: every version up to it
soft-deleted), ``CLEAR_SUBJECT`` and ``NOOP``.  A null value (a tombstone) on a ``SCHEMA`` key is a
hard delete of that version; on a ``CONFIG``/``MODE`` key it removes the setting.
"""
from __future__ import annotations

import json
import os
import urllib.error
import urllib.parse
import urllib.request
from dataclasses import dataclass, field

#: the registry's schemaType values (Avro is the default when the field is absent)
SCHEMA_TYPES = ("AVRO", "PROTOBUF", "JSON")
#: exported schema files named <id><suffix>: their type by suffix
EXPORT_SUFFIXES = {".avsc": "AVRO", ".proto": "PROTOBUF", ".schema.json": "JSON"}
#: seconds an HTTP request to a registry may take
HTTP_TIMEOUT = 10.0


class SchemaSourceError(ValueError):
    """A schema source that cannot be read (a one-line reason)."""


@dataclass
class Schema:
    """One schema by id: its text, type and references, and the (subject, version) pairs it is
    registered under with their state (``live``, ``soft-deleted``, ``hard-deleted``)."""
    id: int
    schema: str
    schema_type: str = "AVRO"
    references: list = field(default_factory=list)
    versions: dict = field(default_factory=dict)  # (subject, version) -> state

    def subject_for(self, topic: str | None = None, is_key: bool = False) -> tuple[str | None, int | None]:
        """The (subject, version) this id is registered under, the topic's own subject
        (``<topic>-key``/``<topic>-value``, TopicNameStrategy) first."""
        if not self.versions:
            return None, None
        own = f"{topic}-{'key' if is_key else 'value'}" if topic else None
        for (s, v) in self.versions:
            if s == own:
                return s, v
        return next(iter(self.versions))

    def state(self, subject: str | None, version: int | None) -> str:
        return self.versions.get((subject, version), "live")


def _schema_type(value: dict) -> str:
    t = (value.get("schemaType") or "AVRO").upper()
    return t if t in SCHEMA_TYPES else t


class SchemaStore:
    """Schemas by id and by (subject, version), with subject configs and modes; a lookup that
    misses asks the ``fallbacks`` in order (an exported dir, a registry URL)."""

    def __init__(self, source: str = "none"):
        self.source = source
        self.by_id: dict[int, Schema] = {}
        self.by_version: dict[tuple, int] = {}  # (subject, version) as the records spell them
        self.config: dict[str | None, dict] = {}
        self.mode: dict[str | None, dict] = {}
        self.deleted_subjects: dict[str | None, int] = {}
        #: subject -> the time (ms) of the record that first soft-deleted it, when known
        self.deleted_at: dict[str | None, int] = {}
        self.unknown_keys: list[dict] = []
        #: (offset, why) of the ``_schemas`` records that are not the registry's JSON (read_schemas_topic)
        self.skipped: list[tuple[int, str]] = []
        self.fallbacks: list = []

    def __len__(self) -> int:
        return len(self.by_id)

    # -- building ----------------------------------------------------------------------------------
    def add(self, value: dict, state: str = "live") -> Schema:
        """Register one schema value (``id``, ``schema``, ``schemaType``, ``references``, and when
        known ``subject`` and ``version``)."""
        sid = int(value["id"])
        s = self.by_id.get(sid)
        if s is None:
            s = self.by_id[sid] = Schema(sid, value["schema"], _schema_type(value), list(value.get("references") or []))
        subject, version = value.get("subject"), value.get("version")
        if subject is not None and version is not None:
            s.versions[(subject, int(version))] = state
            self.by_version[(subject, int(version))] = sid
        return s

    def apply(self, key: dict, value: dict | None, timestamp: int | None = None) -> None:
        """Apply one ``_schemas`` record (key and value parsed from JSON; value None: a tombstone;
        ``timestamp``: the record's, kept as when a subject was soft-deleted)."""
        kt = key.get("keytype")
        subject = key.get("subject")
        deleting = (kt == "DELETE_SUBJECT" and value is not None) or (kt == "SCHEMA" and (value or {}).get("deleted"))
        if deleting and timestamp is not None and timestamp >= 0:
            self.deleted_at.setdefault((value or {}).get("subject", subject), timestamp)
        if kt == "SCHEMA":
            self._apply_schema(key, value)
        elif kt in ("CONFIG", "MODE"):
            table = self.config if kt == "CONFIG" else self.mode
            if value is None:
                table.pop(subject, None)
            else:
                table[subject] = value
        elif kt in ("DELETE_SUBJECT", "CLEAR_SUBJECT"):
            if value is not None:
                self._delete_subject(value.get("subject", subject), value.get("version"),
                                     "soft-deleted" if kt == "DELETE_SUBJECT" else "hard-deleted")
        elif kt != "NOOP":
            self.unknown_keys.append(key)

    def _apply_schema(self, key: dict, value: dict | None) -> None:
        """A SCHEMA record: a value registers (or soft-deletes) a version, a tombstone hard-deletes it."""
        sv = (key.get("subject"), key.get("version"))
        if value is None:  # a hard delete of that version: the schema text stays known, its state says so
            sid = self.by_version.get(sv)
            if sid is not None:
                self.by_id[sid].versions[sv] = "hard-deleted"
            return
        self.add(value, "soft-deleted" if value.get("deleted") else "live")

    def _delete_subject(self, subject: str | None, upto: int | None, state: str) -> None:
        """Every version of ``subject`` up to ``upto`` (all: None) put in ``state``."""
        if state == "soft-deleted":
            self.deleted_subjects[subject] = upto if upto is not None else -1
        for (s, v), sid in self.by_version.items():
            if s == subject and (upto is None or v <= upto):
                versions = self.by_id[sid].versions
                if versions.get((s, v)) != "hard-deleted":
                    versions[(s, v)] = state

    # -- looking up --------------------------------------------------------------------------------
    def get(self, schema_id: int) -> Schema | None:
        """The schema of an id: this store's, else the first fallback's that has it."""
        s = self.by_id.get(schema_id)
        if s is not None:
            return s
        for fb in self.fallbacks:
            s = fb.get(schema_id)
            if s is not None:
                return s
        return None

    def reference(self, ref: dict) -> Schema | None:
        """The schema a reference (``name``, ``subject``, ``version``) points to."""
        sid = self.by_version.get((ref.get("subject"), int(ref.get("version", -1))))
        if sid is not None:
            return self.by_id[sid]
        for fb in self.fallbacks:
            s = fb.reference(ref)
            if s is not None:
                return s
        return None

    def subject_soft_deleted(self, subject: str | None, version: int | None) -> bool:
        """Whether a subject's version is soft- or hard-deleted in the registry's record."""
        sid = self.by_version.get((subject, version))
        return sid is not None and self.by_id[sid].versions.get((subject, version), "live") != "live"

    def summary(self) -> dict:
        """Counts and states for a report."""
        return {"source": self.source, "schemas": len(self.by_id),
                "subjects": sorted({s for s, _ in self.by_version}),
                "deletedSubjects": sorted(self.deleted_subjects),
                "config": {str(k): v for k, v in self.config.items()},
                "mode": {str(k): v for k, v in self.mode.items()}}


def apply_record(store: SchemaStore, key: bytes | None, value: bytes | None, timestamp: int | None = None) -> str | None:
    """Apply one raw ``_schemas`` record; returns why it was skipped (a key or value that is not
    the registry's JSON), else None."""
    try:
        k = json.loads(key) if key is not None else None
        v = json.loads(value) if value is not None else None
    except (ValueError, UnicodeDecodeError) as e:
        return f"not JSON: {e}"
    if not isinstance(k, dict) or (v is not None and not isinstance(v, dict)):
        return "not a registry key/value object"
    try:
        store.apply(k, v, timestamp)
    except (KeyError, TypeError, ValueError) as e:
        return f"not a registry record: {e!r}"
    return None


# -- an exported directory ---------------------------------------------------------------------------
def _export_objects(path: str) -> list:
    with open(path, encoding="utf-8") as f:
        obj = json.load(f)
    return obj if isinstance(obj, list) else [obj]


def store_from_dir(path: str) -> SchemaStore:
    """Schemas exported to a directory: ``*.json`` files holding a registry response object
    (``id``, ``schema``, ``schemaType``, ``references``, and ``subject``/``version`` when known; the
    shape of ``GET /subjects/S/versions/V``) or a list of them (``GET /schemas``); and schema files
    named by id: ``<id>.avsc``, ``<id>.proto``, ``<id>.schema.json``."""
    if not os.path.isdir(path):
        raise SchemaSourceError(f"{path}: not a directory of schemas")
    store = SchemaStore(f"dir:{path}")
    for name in sorted(os.listdir(path)):
        full = os.path.join(path, name)
        suffix = next((s for s in EXPORT_SUFFIXES if name.endswith(s)), None)
        stem = name[: -len(suffix)] if suffix else None
        try:
            if suffix and stem is not None and stem.isdigit():
                with open(full, encoding="utf-8") as f:
                    store.add({"id": int(stem), "schema": f.read(), "schemaType": EXPORT_SUFFIXES[suffix]})
            elif name.endswith(".json"):
                for obj in _export_objects(full):
                    if isinstance(obj, dict) and "id" in obj and "schema" in obj:
                        store.add(obj, "soft-deleted" if obj.get("deleted") else "live")
        except (OSError, ValueError, TypeError) as e:
            raise SchemaSourceError(f"{full}: not an exported schema ({e})") from None
    return store


# -- a registry over HTTP ---------------------------------------------------------------------------
class RegistryClient(SchemaStore):
    """A schema registry asked over HTTP (``GET /schemas/ids/N``, ``GET /subjects/S/versions/V``
    for references), each answer kept; an id the registry does not have is None."""

    def __init__(self, url: str, timeout: float = HTTP_TIMEOUT):
        super().__init__(f"registry:{url}")
        if urllib.parse.urlparse(url).scheme not in ("http", "https"):
            raise SchemaSourceError(f"--schema-registry {url}: not an http(s) URL")
        self.url = url.rstrip("/")
        self.timeout = timeout
        self.missing: set = set()
        self.down: str | None = None  # why the registry stopped answering: not asked again

    def _get(self, path: str) -> dict | None:
        """GET a registry path as JSON (None: 404); SchemaSourceError for anything else."""
        if self.down is not None:
            raise SchemaSourceError(self.down)
        try:
            with urllib.request.urlopen(self.url + path, timeout=self.timeout) as resp:
                return json.loads(resp.read())
        except urllib.error.HTTPError as e:
            if e.code == 404:
                return None
            raise SchemaSourceError(f"schema registry {self.url}{path}: HTTP {e.code}") from None
        except (urllib.error.URLError, OSError, ValueError) as e:
            self.down = f"schema registry {self.url}: {getattr(e, 'reason', e)}"
            raise SchemaSourceError(self.down) from None

    def get(self, schema_id: int) -> Schema | None:
        if schema_id in self.by_id or schema_id in self.missing:
            return self.by_id.get(schema_id)
        got = self._get(f"/schemas/ids/{schema_id}")
        if got is None:
            self.missing.add(schema_id)
            return None
        return self.add(dict(got, id=schema_id))

    def reference(self, ref: dict) -> Schema | None:
        sv = (ref.get("subject"), int(ref.get("version", -1)))
        if sv in self.by_version:
            return self.by_id[self.by_version[sv]]
        got = self._get(f"/subjects/{urllib.parse.quote(str(sv[0]), safe='')}/versions/{sv[1]}")
        return None if got is None else self.add(got)
