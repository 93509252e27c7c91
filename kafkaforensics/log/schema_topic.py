"""The schema registry's own topic (``_schemas``, the registry's ``kafkastore.topic``) read from a log
dir through :class:`~.partition.Partition`, and the schema store a command decodes with: the log
dir's topic first, then an exported directory, then a registry over HTTP.
"""
from __future__ import annotations

import os

from kafkaforensics.log.partition import LogDir, Partition, is_log_dir, is_partition_dir, parse_partition_dir_name
from kafkaforensics.records.schemas import RegistryClient, SchemaSourceError, SchemaStore, apply_record, store_from_dir

#: the registry's default ``kafkastore.topic``
SCHEMAS_TOPIC = "_schemas"


def schemas_partition_dirs(paths, topic: str = SCHEMAS_TOPIC) -> list[str]:
    """The ``_schemas`` partition dirs among ``paths`` (log dirs, partition dirs or segment files; a
    partition dir's log dir is looked at too, so a data topic's dir given alone finds its sibling)."""
    found = []
    for p in paths:
        if os.path.isfile(p):  # a segment file: its partition dir's log dir is looked at
            p = os.path.dirname(os.path.abspath(p))
        if not is_log_dir(p) and is_partition_dir(p) and (parse_partition_dir_name(p) or ("",))[0] == topic:
            cands = [p]
        else:
            log_dir = p if is_log_dir(p) else os.path.dirname(os.path.abspath(p))
            cands = [d for d in (LogDir(log_dir).partition_dirs() if os.path.isdir(log_dir) else [])
                     if (parse_partition_dir_name(d) or ("",))[0] == topic]
        for d in cands:
            if os.path.abspath(d) not in found:
                found.append(os.path.abspath(d))
    return found


def read_schemas_topic(partition_dir: str, store: SchemaStore | None = None) -> SchemaStore:
    """Apply every record of a ``_schemas`` partition, in log order, to a store (a new one unless
    given); records that are not the registry's JSON are counted in ``store.skipped``."""
    store = store if store is not None else SchemaStore(f"topic:{partition_dir}")
    part = Partition.scan(partition_dir)
    for _seg, b, _done in part.batches(producers=False):
        if b.is_control:
            continue
        for r in b.records():
            why = apply_record(store, r.key, r.value, r.timestamp)
            if why is not None:
                store.skipped.append((r.offset, why))
    return store


def load_schema_store(paths=(), *, schema_dir: str | None = None, registry_url: str | None = None,
                      topic: str = SCHEMAS_TOPIC) -> SchemaStore | None:
    """The store a command decodes with: the log dirs' ``_schemas`` topic, falling back to an
    exported ``schema_dir`` and then ``registry_url``; None when there is no source at all.
    Raises :class:`SchemaSourceError` for a source given that cannot be used."""
    dirs = schemas_partition_dirs(paths, topic)
    store = None
    if dirs:
        store = SchemaStore("topic:" + ",".join(dirs))
        for d in dirs:
            read_schemas_topic(d, store)
    extra = []
    if schema_dir:
        extra.append(store_from_dir(schema_dir))
    if registry_url:
        extra.append(RegistryClient(registry_url))
    if store is None and not extra:
        return None
    if store is None:
        store, extra = extra[0], extra[1:]
    store.fallbacks.extend(extra)
    return store


__all__ = ["SCHEMAS_TOPIC", "SchemaSourceError", "load_schema_store", "read_schemas_topic", "schemas_partition_dirs"]
