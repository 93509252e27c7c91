"""A topic's configs as a KRaft log dir holds them: the ``ConfigRecord``s of ``__cluster_metadata``.

Kafka resolves a topic's config in this order: the topic's own config (ConfigRecord, resource type
TOPIC), the broker's dynamic config (resource type BROKER, named by its node id), the cluster-wide
dynamic broker default (BROKER, empty name), then the broker's static ``server.properties`` and the
built-in default. Broker configs carry the topic config under another name (Kafka's
``ServerTopicConfigSynonyms``: ``log.retention.ms``, then ``log.retention.minutes`` and
``log.retention.hours`` converted, for ``retention.ms``). A log dir holds all but the static file:
:func:`topic_configs` resolves what it holds and says where each value came from; :class:`~.log_config.LogConfig` adds
what the log dir does not hold (--config, internal topics' creation configs, Kafka's defaults). A ConfigRecord
with a null value removes that config; removing the topic removes its configs.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkaforensics.errors import KafkaFormatError
from kafkaforensics.log.kraft import metadata_records
from kafkaforensics.log.partition import METADATA_PARTITION, LogDir

#: ConfigResource types in ConfigRecord
TOPIC, BROKER = 2, 4

#: topic config -> its broker synonyms, first wins, with the factor that turns each into the topic's unit
SYNONYMS = {
    "retention.ms": [("log.retention.ms", 1), ("log.retention.minutes", 60_000), ("log.retention.hours", 3_600_000)],
    "retention.bytes": [("log.retention.bytes", 1)],
    "cleanup.policy": [("log.cleanup.policy", None)],
    "min.compaction.lag.ms": [("log.cleaner.min.compaction.lag.ms", 1)],
    "max.compaction.lag.ms": [("log.cleaner.max.compaction.lag.ms", 1)],
    "delete.retention.ms": [("log.cleaner.delete.retention.ms", 1)],
    "segment.bytes": [("log.segment.bytes", 1)],
    "index.interval.bytes": [("log.index.interval.bytes", 1)],
    "segment.index.bytes": [("log.index.size.max.bytes", 1)],
    "message.timestamp.type": [("log.message.timestamp.type", None)],
}


@dataclass
class TopicConfigs:
    """The configs the log dir's metadata gives ``topic``: ``values`` by topic config name, ``sources``
    saying where each came from; ``metadata`` is the metadata partition read (None: the log dir has none)."""
    topic: str
    metadata: str | None
    values: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    unreadable: str | None = None  # why the metadata could not be read to its end (what was read applies)

    def get_int(self, name: str) -> int | None:
        value = self.values.get(name)
        try:
            return None if value is None else int(value)
        except ValueError:
            return None

    def policies(self) -> set[str] | None:
        """``cleanup.policy`` as a set ({"delete"}, {"compact"}, both), None when the metadata gives none."""
        value = self.values.get("cleanup.policy")
        return None if value is None else {p.strip() for p in value.split(",") if p.strip()}

    def describe(self, name: str) -> str:
        return f"{name}={self.values[name]} ({self.sources[name]})"


def find_metadata_dir(partition_dir: str) -> str | None:
    """The ``__cluster_metadata-0`` beside a partition directory, if its log dir holds one."""
    path = os.path.join(os.path.dirname(os.path.abspath(partition_dir)), METADATA_PARTITION)
    return path if os.path.isdir(path) else None


def topic_configs(partition_dir: str, topic: str) -> TopicConfigs:
    """What the metadata beside ``partition_dir`` configures for ``topic`` (see the module's docstring)."""
    metadata = find_metadata_dir(partition_dir)
    out = TopicConfigs(topic, metadata)
    if metadata is None:
        return out
    node_id = None
    try:
        node_id = (LogDir(os.path.dirname(metadata)).meta_properties() or {}).get("nodeId")
    except (OSError, ValueError, KafkaFormatError):
        pass
    topic_ids: dict[str, str] = {}
    own: dict[str, str] = {}
    broker: dict[str, dict[str, str]] = {}
    try:
        _replay(metadata_records(metadata), topic, topic_ids, own, broker)
    except (OSError, KafkaFormatError) as e:  # damage the walk does not step over: what came before applies
        out.unreadable = str(e)
    layers = [("topic config", own, False)]
    if node_id is not None:
        layers.append((f"broker {node_id}'s dynamic config", broker.get(str(node_id), {}), True))
    layers.append(("cluster-wide dynamic broker default", broker.get("", {}), True))
    for name, synonyms in SYNONYMS.items():
        for label, configs, by_synonym in layers:
            found = _lookup(configs, name, synonyms, by_synonym)
            if found is not None:
                out.values[name], source = found
                out.sources[name] = label + (f", {source}" if source != name else "")
                break
    return out


def _replay(records, topic: str, topic_ids: dict, own: dict, broker: dict) -> None:
    """Apply the metadata records' TopicRecords, RemoveTopicRecords and ConfigRecords."""
    for rec in records:
        kind, d = rec.get("type"), rec.get("data") or {}
        if kind == "TopicRecord":
            topic_ids[d["Name"]] = d["TopicId"]
        elif kind == "RemoveTopicRecord" and topic_ids.get(topic) == d.get("TopicId"):
            own.clear()
            del topic_ids[topic]
        elif kind == "ConfigRecord":
            rtype, name, key, value = d.get("ResourceType"), d.get("ResourceName"), d.get("Name"), d.get("Value")
            target = own if rtype == TOPIC and name == topic else broker.setdefault(name, {}) if rtype == BROKER else None
            if target is None:
                continue
            if value is None:
                target.pop(key, None)
            else:
                target[key] = value


def _lookup(configs: dict, name: str, synonyms, by_synonym: bool):
    if not by_synonym:
        return (configs[name], name) if name in configs else None
    for synonym, factor in synonyms:
        if synonym in configs:
            value = configs[synonym]
            if factor not in (None, 1):
                try:
                    value = str(int(value) * factor)
                except ValueError:
                    continue
            return value, synonym
    return None
