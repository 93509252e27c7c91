"""Kafka 4.0's topic configs as DescribeConfigs answers them: every one with its value, source and
synonyms (Kafka's ConfigHelper.createTopicConfigEntry over LogConfig and ServerTopicConfigSynonyms).

A config the topic sets (a ``ConfigRecord`` in the log dir's KRaft metadata, or CreateTopics' configs on
this broker) has source TOPIC_CONFIG and itself as first synonym; otherwise its value is the broker's:
this broker has no server.properties, so that is Kafka's default, source DEFAULT_CONFIG, and the
synonyms are the broker configs that carry a default (``retention.ms`` shows ``log.retention.hours`` =
168: ``log.retention.ms`` and ``log.retention.minutes`` have none).  Configs Kafka 4.0 removed
(``message.format.version``, ``message.downconversion.enable``,
``message.timestamp.difference.max.ms``) and names Kafka does not know are not listed, as Kafka lists
only LogConfig's.
"""
from __future__ import annotations

from specs.messages import DescribeConfigsResponse

from kafkaforensics.broker.log_validator import MAX_MESSAGE_BYTES, TIMESTAMP_AFTER_MAX_MS, TIMESTAMP_BEFORE_MAX_MS

#: DescribeConfigsResponse.ConfigSource ids
UNKNOWN, TOPIC_CONFIG, DYNAMIC_BROKER_CONFIG, DYNAMIC_DEFAULT_BROKER_CONFIG, STATIC_BROKER_CONFIG, DEFAULT_CONFIG = range(6)
#: DescribeConfigsResponse.ConfigType ids
BOOLEAN, STRING, INT, SHORT, LONG, DOUBLE, LIST = 1, 2, 3, 4, 5, 6, 7

_MAX = str(2**63 - 1)
#: topic config -> (default, type, [(broker synonym, its default or None)]), Kafka 4.0
TOPIC_CONFIGS: dict[str, tuple[str, int, list]] = {
    "cleanup.policy": ("delete", LIST, [("log.cleanup.policy", "delete")]),
    "compression.gzip.level": ("-1", INT, [("compression.gzip.level", "-1")]),
    "compression.lz4.level": ("9", INT, [("compression.lz4.level", "9")]),
    "compression.type": ("producer", STRING, [("compression.type", "producer")]),
    "compression.zstd.level": ("3", INT, [("compression.zstd.level", "3")]),
    "delete.retention.ms": ("86400000", LONG, [("log.cleaner.delete.retention.ms", "86400000")]),
    "file.delete.delay.ms": ("60000", LONG, [("log.segment.delete.delay.ms", "60000")]),
    "flush.messages": (_MAX, LONG, [("log.flush.interval.messages", _MAX)]),
    "flush.ms": (_MAX, LONG, [("log.flush.interval.ms", None), ("log.flush.scheduler.interval.ms", _MAX)]),
    "follower.replication.throttled.replicas": ("", LIST, []),
    "index.interval.bytes": ("4096", INT, [("log.index.interval.bytes", "4096")]),
    "leader.replication.throttled.replicas": ("", LIST, []),
    "local.retention.bytes": ("-2", LONG, [("log.local.retention.bytes", "-2")]),
    "local.retention.ms": ("-2", LONG, [("log.local.retention.ms", "-2")]),
    "max.compaction.lag.ms": (_MAX, LONG, [("log.cleaner.max.compaction.lag.ms", _MAX)]),
    "max.message.bytes": (str(MAX_MESSAGE_BYTES), INT, [("message.max.bytes", str(MAX_MESSAGE_BYTES))]),
    "message.timestamp.after.max.ms": (str(TIMESTAMP_AFTER_MAX_MS), LONG,
                                       [("log.message.timestamp.after.max.ms", str(TIMESTAMP_AFTER_MAX_MS))]),
    "message.timestamp.before.max.ms": (str(TIMESTAMP_BEFORE_MAX_MS), LONG,
                                        [("log.message.timestamp.before.max.ms", str(TIMESTAMP_BEFORE_MAX_MS))]),
    "message.timestamp.type": ("CreateTime", STRING, [("log.message.timestamp.type", "CreateTime")]),
    "min.cleanable.dirty.ratio": ("0.5", DOUBLE, [("log.cleaner.min.cleanable.ratio", "0.5")]),
    "min.compaction.lag.ms": ("0", LONG, [("log.cleaner.min.compaction.lag.ms", "0")]),
    "min.insync.replicas": ("1", INT, [("min.insync.replicas", "1")]),
    "preallocate": ("false", BOOLEAN, [("log.preallocate", "false")]),
    "remote.log.copy.disable": ("false", BOOLEAN, []),
    "remote.log.delete.on.disable": ("false", BOOLEAN, []),
    "remote.storage.enable": ("false", BOOLEAN, []),
    "retention.bytes": ("-1", LONG, [("log.retention.bytes", "-1")]),
    "retention.ms": ("604800000", LONG, [("log.retention.ms", None), ("log.retention.minutes", None),
                                         ("log.retention.hours", "168")]),
    "segment.bytes": ("1073741824", INT, [("log.segment.bytes", "1073741824")]),
    "segment.index.bytes": ("10485760", INT, [("log.index.size.max.bytes", "10485760")]),
    "segment.jitter.ms": ("0", LONG, [("log.roll.jitter.ms", None), ("log.roll.jitter.hours", "0")]),
    "segment.ms": ("604800000", LONG, [("log.roll.ms", None), ("log.roll.hours", "168")]),
    "unclean.leader.election.enable": ("false", BOOLEAN, [("unclean.leader.election.enable", "false")]),
}


def effective(overrides: dict[str, str]) -> dict[str, str]:
    """Every topic config's value: the topic's own, else Kafka's default."""
    return {name: overrides.get(name, default) for name, (default, _t, _s) in TOPIC_CONFIGS.items()}


_DCR = DescribeConfigsResponse


def synonym(name: str, value: str | None, source: int) -> DescribeConfigsResponse.DescribeConfigsSynonym:
    """One entry of a config's synonym chain."""
    return _DCR.DescribeConfigsSynonym(name=name, value=value, source=source)


def config_result(name: str, value: str | None, source: int, *, read_only: bool, is_default: bool, synonyms: list,
                  ctype: int) -> DescribeConfigsResponse.DescribeConfigsResourceResult:
    """One config as DescribeConfigs answers it (never sensitive, no documentation)."""
    return _DCR.DescribeConfigsResourceResult(name=name, value=value, read_only=read_only, config_source=source,
                                              is_default=is_default, is_sensitive=False, synonyms=synonyms,
                                              config_type=ctype, documentation=None)


def describe(overrides: dict[str, str], keys=None,
             synonyms: bool = False) -> list[DescribeConfigsResponse.DescribeConfigsResourceResult]:
    """DescribeConfigs' entries for a topic with these ``overrides`` (``keys``: only those names)."""
    out = []
    for name, (default, ctype, broker) in sorted(TOPIC_CONFIGS.items()):
        if keys is not None and name not in keys:
            continue
        chain = [synonym(n, v, DEFAULT_CONFIG) for n, v in broker if v is not None]
        if name in overrides:
            chain.insert(0, synonym(name, overrides[name], TOPIC_CONFIG))
        out.append(config_result(name, overrides.get(name, default), chain[0].source if chain else DEFAULT_CONFIG,
                                 read_only=False, is_default=name not in overrides,
                                 synonyms=chain if synonyms else [], ctype=ctype))
    return out


_CHOICES = {"cleanup.policy": {"delete", "compact"}, "message.timestamp.type": {"CreateTime", "LogAppendTime"},
            "compression.type": {"uncompressed", "zstd", "lz4", "snappy", "gzip", "producer"}}


def invalid(name: str, value) -> str | None:
    """Why Kafka's controller refuses a topic config (INVALID_CONFIG), or None: an unknown name, or a value
    that is not of its type / not one of its choices."""
    spec = TOPIC_CONFIGS.get(name)
    if spec is None:
        return f"Unknown topic config name: {name}"
    if value is None:
        return None
    ctype = spec[1]
    try:
        if ctype in (INT, LONG, SHORT):
            int(value)
        elif ctype == DOUBLE:
            float(value)
        elif ctype == BOOLEAN and value.lower() not in ("true", "false"):
            raise ValueError
    except ValueError:
        return f"Invalid value {value} for configuration {name}"
    if name in _CHOICES:
        items = [v.strip() for v in value.split(",")] if ctype == LIST else [value]
        if not all(v in _CHOICES[name] for v in items):
            return f"Invalid value {value} for configuration {name}: String must be one of: " + \
                ", ".join(sorted(_CHOICES[name]))
    return None
