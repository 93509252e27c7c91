"""A partition's effective topic configuration, as Kafka's ``LogConfig`` holds it for a log.

Each config has a value and the place it came from, resolved in this order (the first that gives
the key wins):

1. the log dir's ``ConfigRecord`` s in ``__cluster_metadata`` (the topic's own config, the broker's
   dynamic config, the cluster-wide dynamic default: :mod:`~kafkaforensics.log.topic_config`);
2. ``--config KEY=VALUE`` given by the user, for what the log dir does not hold (a ZooKeeper-mode log
   dir keeps its topic configs in ZooKeeper, not on disk);
3. the configs Kafka creates its internal topics with (:data:`INTERNAL_TOPIC_CONFIGS`);
4. Kafka's built-in defaults (``LogConfig``/``ServerLogConfigs``) of the generation that wrote the
   log dir (:data:`BROKER_DEFAULTS`).

The policy questions every command asks come from here once: whether Kafka's retention deletes by
time and size (``cleanup.policy`` includes ``delete``; ``UnifiedLog.deleteOldSegments`` applies the
log-start-offset rule whatever the policy), whether its cleaner compacts (``compact``), and whether
the log is the KRaft metadata log, which Kafka never cleans nor expires by retention (KRaft snapshots
trim it). Retention values are parsed as Kafka parses them: ``-1`` is unlimited.
"""
from __future__ import annotations

import os
from dataclasses import dataclass, field

from kafkaforensics.log.partition import METADATA_TOPIC, parse_partition_dir_name
from kafkaforensics.log.segment import KRAFT_SNAPSHOT_RE
from kafkaforensics.log.topic_config import TopicConfigs, topic_configs

LONG_MAX = (1 << 63) - 1

#: Kafka's built-in topic defaults (LogConfig / ServerLogConfigs: ``log.cleanup.policy``,
#: ``log.retention.hours=168``, ...) and the feature release that introduced each
BROKER_DEFAULTS = {
    "cleanup.policy": ("delete", (0, 8)),
    "retention.ms": ("604800000", (0, 8)),
    "retention.bytes": ("-1", (0, 8)),
    "delete.retention.ms": ("86400000", (0, 8)),
    "min.compaction.lag.ms": ("0", (0, 10)),           # KIP-58, 0.10.1
    "max.compaction.lag.ms": (str(LONG_MAX), (2, 3)),  # KIP-354
    "segment.bytes": (str(1 << 30), (0, 8)),
    "index.interval.bytes": ("4096", (0, 8)),
    "segment.index.bytes": (str(10 << 20), (0, 8)),    # the size the active segment's indexes are preallocated to
    "message.timestamp.type": ("CreateTime", (0, 10)),  # KIP-32
}

#: the configs Kafka creates its internal topics with (each key not set here is the broker default)
INTERNAL_TOPIC_CONFIGS = {
    # GroupCoordinator.offsetsTopicConfigs / GroupCoordinatorService.groupMetadataTopicConfigs
    "__consumer_offsets": ({"cleanup.policy": "compact", "segment.bytes": str(100 << 20)},
                           "the config Kafka creates __consumer_offsets with (offsets.topic.segment.bytes default)"),
    # TransactionStateManager.transactionTopicConfigs
    "__transaction_state": ({"cleanup.policy": "compact", "segment.bytes": str(100 << 20)},
                            "the config Kafka creates __transaction_state with "
                            "(transaction.state.log.segment.bytes default)"),
    # ShareCoordinatorService.shareGroupStateTopicConfigs (KIP-932: delete, pruned by the coordinator)
    "__share_group_state": ({"cleanup.policy": "delete", "segment.bytes": str(100 << 20)},
                            "the config Kafka creates __share_group_state with "
                            "(share.coordinator.state.topic.segment.bytes default)"),
    # TopicBasedRemoteLogMetadataManager.createRemoteLogMetadataTopic
    "__remote_log_metadata": ({"cleanup.policy": "delete", "retention.ms": "-1"},
                              "the config Kafka creates __remote_log_metadata with "
                              "(remote.log.metadata.topic.retention.ms default)"),
}

#: the configs ``--config`` takes, with how Kafka parses each value
INT_CONFIGS = frozenset(k for k in BROKER_DEFAULTS if k not in ("cleanup.policy", "message.timestamp.type"))
CLEANUP_POLICIES = frozenset({"delete", "compact"})
TIMESTAMP_TYPES = frozenset({"CreateTime", "LogAppendTime"})

#: what a command does to the log, and the policy Kafka requires for it
DELETE, COMPACT = "delete", "compact"
_ACTS = {DELETE: "Kafka's retention deletes by time and size only", COMPACT: "Kafka's cleaner compacts only"}


class PolicyRefusal(ValueError):
    """A command Kafka's policy for this log forbids; ``str()`` is the one line to print."""


def parse_config_flags(items) -> dict[str, str]:
    """``--config KEY=VALUE`` items as a dict, each value checked as Kafka parses it (ValueError: one line)."""
    out = {}
    for item in items or ():
        key, sep, value = item.partition("=")
        key, value = key.strip(), value.strip()
        if not sep or not key:
            raise ValueError(f"--config {item!r}: expected KEY=VALUE, e.g. cleanup.policy=compact")
        if key not in BROKER_DEFAULTS:
            raise ValueError(f"--config {key}: not a topic config kfx applies (it takes {', '.join(BROKER_DEFAULTS)})")
        _check_value(key, value)
        out[key] = value
    return out


def _check_value(key: str, value: str) -> None:
    if key in INT_CONFIGS:
        try:
            n = int(value)
        except ValueError:
            raise ValueError(f"--config {key}={value}: not a number") from None
        if n < (-1 if key in ("retention.ms", "retention.bytes") else 0) or n > LONG_MAX:
            raise ValueError(f"--config {key}={value}: out of range")
    elif key == "cleanup.policy":
        got = {p.strip() for p in value.split(",")}
        if not got or not got <= CLEANUP_POLICIES:
            raise ValueError(f"--config cleanup.policy={value}: expected delete, compact or compact,delete")
    elif value not in TIMESTAMP_TYPES:
        raise ValueError(f"--config {key}={value}: expected CreateTime or LogAppendTime")


def _present_in(kafka_version, since) -> bool:
    """Whether a config introduced in ``since`` exists in the generation ``kafka_version`` (unknown: yes)."""
    return kafka_version is None or not kafka_version.known or kafka_version.high is None \
        or tuple(kafka_version.high) > tuple(since)


@dataclass
class LogConfig:
    """The effective configuration of one partition's log: ``values`` by topic config name (text, as
    Kafka's config maps hold them) and ``sources`` saying where each came from (see the module's
    docstring); ``records`` is what the log dir's ConfigRecords gave (None: no topic name)."""
    path: str
    topic: str | None
    values: dict = field(default_factory=dict)
    sources: dict = field(default_factory=dict)
    #: the keys taken from a place a note names (the metadata, --config, an internal topic's creation),
    #: each with the end of its note (" from __cluster_metadata-0")
    noted: dict = field(default_factory=dict)
    records: TopicConfigs | None = None
    metadata_log: bool = False
    #: the ``--config`` values the log dir's metadata overrides (one note each)
    unused: list = field(default_factory=list)

    @classmethod
    def of(cls, partition_dir: str, given: dict | None = None, kafka_version=None) -> "LogConfig":
        """The effective config of the partition dir ``partition_dir`` (see the module's docstring);
        ``given``: ``--config`` values; ``kafka_version``: the generation whose defaults apply."""
        parsed = parse_partition_dir_name(partition_dir)
        topic = parsed[0] if parsed else None
        cfg = cls(partition_dir, topic, metadata_log=_is_metadata_log(partition_dir, topic))
        cfg.records = topic_configs(partition_dir, topic) if topic is not None else None
        meta = os.path.basename(cfg.records.metadata) if cfg.records and cfg.records.metadata else None
        internal, internal_source = INTERNAL_TOPIC_CONFIGS.get(topic, ({}, "")) if topic is not None else ({}, "")
        version = kafka_version.label() if kafka_version is not None and kafka_version.known else None
        for name, (default, since) in BROKER_DEFAULTS.items():
            if cfg.records is not None and name in cfg.records.values:
                cfg._set(name, cfg.records.values[name], cfg.records.sources[name], f" from {meta}")
                if given and name in given and given[name] != cfg.values[name]:
                    cfg.unused.append(f"--config {name}={given[name]} not applied: the log dir's metadata sets "
                                      f"{cfg.describe(name)}")
            elif given and name in given:
                cfg._set(name, given[name], "--config", "")
            elif name in internal:
                cfg._set(name, internal[name], internal_source, "")
            elif _present_in(kafka_version, since):
                cfg._set(name, default, f"Kafka {version}'s default" if version else "Kafka's default", None)
        return cfg

    def _set(self, name: str, value: str, source: str, where: str | None) -> None:
        """Set ``name`` from ``source``; ``where`` (None: a built-in default no note names) ends its note."""
        self.values[name], self.sources[name] = value, source
        if where is not None:
            self.noted[name] = where

    def get(self, name: str) -> str | None:
        return self.values.get(name)

    def get_int(self, name: str) -> int | None:
        """An integer config (None: not set, or not a number)."""
        try:
            return None if self.values.get(name) is None else int(self.values[name])
        except ValueError:
            return None

    def describe(self, name: str) -> str:
        """``name=value (source)``."""
        return f"{name}={self.values[name]} ({self.sources[name]})"

    @property
    def policies(self) -> set[str]:
        """``cleanup.policy`` as a set: {"delete"}, {"compact"} or both."""
        return {p.strip() for p in (self.values.get("cleanup.policy") or "").split(",") if p.strip()}

    @property
    def deletes(self) -> bool:
        """Whether Kafka's retention deletes this log by time and size (never the metadata log)."""
        return not self.metadata_log and DELETE in self.policies

    @property
    def compacts(self) -> bool:
        """Whether Kafka's cleaner compacts this log (never the metadata log)."""
        return not self.metadata_log and COMPACT in self.policies

    def notes(self) -> list[str]:
        """The --config values not applied, and where the log dir's metadata could not be read to its end
        (what came before applies)."""
        out = list(self.unused)
        if self.records is not None and self.records.unreadable:
            out.append(f"{self.records.metadata} could not be read to its end ({self.records.unreadable}); "
                       "the configs before that point apply")
        return out

    def settle(self, flags: dict, note_defaults: bool = False) -> tuple[dict, list[str]]:
        """Each setting as a command uses it: ``flags`` maps a config name to its flag's value (None:
        not given); a setting not given is this config's value (an int; ``cleanup.policy`` as text).
        Also the notes naming the values that came from the metadata, --config or an internal topic
        (``note_defaults``: Kafka's built-in defaults too, for a command that deletes by them)."""
        values, notes = {}, self.notes()
        for name, flag in flags.items():
            if flag is not None or name not in self.values:
                values[name] = flag
                continue
            values[name] = self.values[name] if name == "cleanup.policy" else self.get_int(name)
            note = self.note_for(name)
            if note is not None:
                notes.append(note)
            elif note_defaults:
                notes.append(f"{self.describe(name)}: the log dir holds no {name} for {self.topic}, so Kafka's "
                             f"default applies (--config {name}=VALUE or the flag says otherwise)")
        return values, notes

    def note_for(self, name: str) -> str | None:
        """The note naming where ``name`` came from (None: Kafka's built-in default, or not set)."""
        if name not in self.noted:
            return None
        return f"{self.describe(name)}{self.noted[name]}, as Kafka would use it"

    def check(self, action: str, *, acting: bool = True, ignore: bool = False) -> str | None:
        """Whether a command may ``action`` (:data:`DELETE`: time and size retention, :data:`COMPACT`)
        this log: :class:`PolicyRefusal` for the metadata log (always) and, while ``acting`` (the user
        asked for it), for a policy without ``action`` unless ``ignore``; returns the one line to print
        when it acts against the topic's policy (``ignore``), else None."""
        if self.metadata_log:
            never = ("compacts it (its records have no keys; KRaft snapshots trim it)" if action == COMPACT
                     else "deletes its segments by retention (KRaft snapshots trim it)")
            raise PolicyRefusal(f"{self.path}: the KRaft metadata log ({METADATA_TOPIC}): Kafka never {never}, "
                                "and kfx refuses to, even with --ignore-topic-config")
        if action in self.policies or not acting:
            return None
        why = f"{self.describe('cleanup.policy')}: {_ACTS[action]} topics whose cleanup.policy includes {action}"
        if not ignore:
            hint = "" if "cleanup.policy" in self.noted else \
                " (or --config cleanup.policy=... says the topic's policy, which the log dir does not hold)"
            raise PolicyRefusal(f"{self.path}: {why}; --ignore-topic-config acts anyway{hint}")
        return f"acting against the topic's policy (--ignore-topic-config): {why}"


def _is_metadata_log(partition_dir: str, topic: str | None) -> bool:
    """The KRaft metadata log: ``__cluster_metadata-0``, or any dir holding KRaft snapshots."""
    if topic == METADATA_TOPIC:
        return True
    try:
        return any(KRAFT_SNAPSHOT_RE.match(n) for n in os.listdir(partition_dir))
    except OSError:
        return False
