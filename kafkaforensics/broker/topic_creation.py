"""The replay broker's topic creation: CreateTopics, Metadata's auto-creation (auto.create.topics.enable)
and the partition dirs both make (partition.metadata, an empty active segment), planned on the event loop
(names reserved, Kafka's controller's caps checked) and made by :meth:`TopicCreation.make_partitions`,
which the edge may run in a worker thread; and Kafka's rules for topic names."""
from __future__ import annotations

import base64
import logging
import os
import re
import uuid
from typing import TypeVar

from specs.kafka_errors import (INVALID_CONFIG, INVALID_PARTITIONS, INVALID_REPLICATION_FACTOR, INVALID_REQUEST,
                                INVALID_TOPIC, KAFKA_STORAGE_ERROR, NONE, POLICY_VIOLATION, TOPIC_ALREADY_EXISTS)
from specs.message_types import typed
from specs.messages import CreatePartitionsResponse, CreateTopicsRequest, CreateTopicsResponse
from specs.protocol_messages import ApiKey

from kafkaforensics.broker.topic_configs import invalid
from kafkaforensics.log.leader_epochs import LeaderEpochCache
from kafkaforensics.log.live_log import LiveLog
from kafkaforensics.log.partition import METADATA_TOPIC, write_partition_metadata

_TOPIC_RE = re.compile(r"[a-zA-Z0-9._-]{1,249}")
#: Kafka's controller writes at most this many records for one request (QuorumController's
#: MAX_RECORDS_PER_USER_OP): a topic is one TopicRecord, one PartitionRecord a partition and one
#: ConfigRecord a config; a CreateTopics or CreatePartitions over it is refused whole with POLICY_VIOLATION
MAX_RECORDS_PER_REQUEST = 10_000


#: created by their coordinators, never by a client's Metadata or Produce
INTERNAL_TOPICS = {"__consumer_offsets", "__transaction_state", "__share_group_state", "__cluster_metadata"}

_log = logging.getLogger("kfx.serve")


class PartitionsNotMade(Exception):
    """Making a plan's partition dirs failed at ``topic``: ``made`` are the LiveLogs made before."""

    def __init__(self, made: list, topic: str, error: OSError):
        super().__init__(f"{topic}: {error}")
        self.made, self.topic, self.error = made, topic, error


def new_topic_id() -> str:
    """A random topic id, as Kafka's controller gives (base64url, never starting with '-')."""
    while True:
        tid = base64.urlsafe_b64encode(uuid.uuid4().bytes).decode().rstrip("=")
        if not tid.startswith("-"):
            return tid


def valid_topic(name) -> bool:
    """Kafka's Topic.validate: 1-249 characters of [a-zA-Z0-9._-], neither "." nor ".." (the whole name:
    a trailing newline is no exception)."""
    return isinstance(name, str) and _TOPIC_RE.fullmatch(name) is not None and name not in (".", "..")


def bad_config(configs: list) -> str | None:
    """The first reason Kafka's controller would refuse one of a CreateTopics topic's (typed) configs."""
    return next((why for c in configs if (why := invalid(c.name, c.value))), None)


def collision_key(name: str) -> str:
    """Kafka's Topic.unifyCollisionChars: "." and "_" collide in metric names, so a.b and a_b cannot both exist."""
    return name.replace(".", "_")


#: what makes partitions: CreateTopics' answer, CreatePartitions', or none (Metadata's auto-creation)
Answer = TypeVar("Answer", CreateTopicsResponse, CreatePartitionsResponse, None)


def _rows(body: CreateTopicsResponse | CreatePartitionsResponse | None) -> list:
    """The topics of an answer that makes partitions."""
    if isinstance(body, CreateTopicsResponse):
        return body.topics
    return body.results if body is not None else []


class TopicCreation:
    """Topic creation over the broker ``b`` that holds this object (``b.topic_creation``)."""

    def __init__(self, broker):
        self.b = broker

    def new_partition(self, topic: str, partition: int, topic_id: str) -> LiveLog:
        """A partition dir with its partition.metadata and empty active segment, served from now on."""
        plan = [(topic, partition, 1, topic_id)]
        made = self.make_partitions(plan)
        self.adopt([], made)
        return made[0]

    def create_topics(self, version: int, body) -> CreateTopicsResponse:
        """CreateTopics, its partition dirs made here (the edge runs :meth:`plan_topics`' work in a thread)."""
        return self.make_and_adopt(*self.plan_topics(version, body))

    def plan_topics(self, version: int, body) -> tuple[CreateTopicsResponse, list]:
        """The answer to a CreateTopics and what it creates: [(topic, first partition, count, topic id)].
        The names are reserved until :meth:`adopt` (a second request for one is TOPIC_ALREADY_EXISTS)."""
        req: CreateTopicsRequest = typed(ApiKey.CREATE_TOPICS, body)
        out, plan = [], []
        topics = req.topics
        records = sum(1 + (self.b.default_partitions if t.num_partitions == -1 else max(t.num_partitions, 0))
                      + len(t.configs or []) for t in topics)
        collisions = {collision_key(t) for t in self.b.topics()} | {collision_key(t) for t in self.b.creating}
        for t in topics:
            name, n = t.name, t.num_partitions
            r = CreateTopicsResponse.CreatableTopicResult(name=name, error_code=NONE, error_message=None,
                                                          num_partitions=n, replication_factor=1, configs=None,
                                                          topic_id="AAAAAAAAAAAAAAAAAAAAAA")
            why = self._refused(t, collisions, records)
            if why is not None:
                r.error_code, r.error_message = why
            else:
                n = self.b.default_partitions if n == -1 else n
                r.num_partitions = n
                collisions.add(collision_key(name))
                if not req.validate_only:
                    r.topic_id = new_topic_id()
                    plan.append((name, 0, n, r.topic_id))
                    self.b.creating.add(name)
                    configs = {c.name: c.value for c in t.configs or [] if c.value is not None}
                    if configs:
                        self.b.topic_overrides(name)  # loaded before one is added
                        self.b.config_overrides[name] = configs
            out.append(r)
        return CreateTopicsResponse(topics=out), plan

    def _refused(self, t: CreateTopicsRequest.CreatableTopic, collisions: set,
                 records: int) -> tuple[int, str] | None:
        """(error, message) Kafka's controller refuses one CreateTopics topic with, or None."""
        name, n = t.name, t.num_partitions
        if not valid_topic(name):
            return INVALID_TOPIC, (f"Topic name {name!r} is illegal, it contains a character other than ASCII "
                                   "alphanumerics, '.', '_' and '-', or is empty, '.', '..' or over 249 characters")
        if name == METADATA_TOPIC:  # KafkaApis/ControllerApis.createTopics
            return INVALID_REQUEST, f"Creation of internal topic {name} is prohibited."
        if any(k[0] == name for k in self.b.partitions) or name in self.b.creating:
            return TOPIC_ALREADY_EXISTS, f"Topic '{name}' already exists."
        if collision_key(name) in collisions:
            return INVALID_TOPIC, f"Topic '{name}' collides with an existing topic ('.' and '_' collide)"
        if n == 0 or n < -1:
            return INVALID_PARTITIONS, "Number of partitions was set to an invalid non-positive value."
        if records > MAX_RECORDS_PER_REQUEST:
            return POLICY_VIOLATION, "Unable to perform excessively large batch operation."
        why = bad_config(t.configs or [])
        if why:
            return INVALID_CONFIG, why
        if t.replication_factor not in (-1, 1):
            return INVALID_REPLICATION_FACTOR, (f"Unable to replicate the partition {t.replication_factor} time(s): "
                                                "The target replication factor of "
                                                f"{t.replication_factor} cannot be reached because only 1 broker(s) "
                                                "are registered.")
        return None

    def make_partitions(self, plan: list) -> list:
        """The partition dirs of a plan, each with partition.metadata and an empty active segment
        (file work only: safe in a worker thread); their LiveLogs, for :meth:`adopt`."""
        made: list[LiveLog] = []
        for topic, first, count, tid in plan:
            for p in range(first, first + count):
                d = os.path.join(self.b.log_dir, f"{topic}-{p}")
                try:
                    os.makedirs(d, exist_ok=topic in INTERNAL_TOPICS)
                    write_partition_metadata(d, tid)
                    s = LiveLog(d, topic, p)
                    s.topic_id, s.epochs = tid, LeaderEpochCache([(0, 0)])
                    s.create_active()
                except OSError as e:
                    raise PartitionsNotMade(made, topic, e) from None
                made.append(s)
        return made

    def make_and_adopt(self, body: Answer, plan: list, make=None) -> Answer:
        """Make the plan's partitions (``make``: how, e.g. in a thread) and serve them; a topic whose
        dirs could not all be made answers KAFKA_STORAGE_ERROR with the reason (those made are served)."""
        made: list[LiveLog] = []
        try:
            made = (make or self.make_partitions)(plan)
        except PartitionsNotMade as e:
            made = e.made
            _log.warning("creating %s: %s", e.topic, e.error)
            unmade = {t for t, *_r in plan} - {s.topic for s in made}
            for row in _rows(body):
                if row.name == e.topic or row.name in unmade:
                    row.error_code, row.error_message = KAFKA_STORAGE_ERROR, str(e.error)
        finally:
            self.adopt(plan, made)
        return body

    def adopt(self, plan: list, made: list) -> None:
        """Serve what :meth:`make_partitions` made; the names are no longer reserved."""
        for s in made:
            self.b.partitions[(s.topic, s.partition)] = s
        for topic, *_rest in plan:
            self.b.creating.discard(topic)

    def may_auto_create(self, name) -> bool:
        """Whether auto.create.topics.enable may create ``name``: only writable, only a legal name that
        collides with no topic, never an internal topic, never one being created."""
        collisions = ({collision_key(t) for t in self.b.topics() if t != name}
                      | {collision_key(t) for t in self.b.creating})
        return (self.b.writable and self.b.auto_create and valid_topic(name) and name not in INTERNAL_TOPICS
                and name not in self.b.creating and collision_key(name) not in collisions)

    def plan_auto_create(self, version: int, req) -> list:
        """The topics a Metadata request has auto-created (auto.create.topics.enable), as a plan for
        :meth:`make_partitions` (the edge makes them off the event loop, then the answer is given)."""
        names = self.b.metadata_names(version, req)
        plan = []
        if names and req.allow_auto_topic_creation:
            for name in dict.fromkeys(n for n in names if n is not None):
                if self.may_auto_create(name) and not any(k[0] == name for k in self.b.partitions):
                    plan.append((name, 0, self.b.default_partitions, new_topic_id()))
                    self.b.creating.add(name)
        return plan
