"""Generated from specs/protocol_messages.py by specs.message_types.stub(): do not edit."""
from typing import Any

from specs.message_types import Struct


class ApiVersionsRequest(Struct):
    client_software_name: str
    client_software_version: str
    unknown_tagged_fields: dict | None
    def __init__(self, *, client_software_name: str = ..., client_software_version: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class MetadataRequest(Struct):
    class MetadataRequestTopic(Struct):
        topic_id: str
        name: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic_id: str = ..., name: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[MetadataRequest.MetadataRequestTopic] | None
    allow_auto_topic_creation: bool
    include_cluster_authorized_operations: bool
    include_topic_authorized_operations: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[MetadataRequest.MetadataRequestTopic] | None = ..., allow_auto_topic_creation: bool = ..., include_cluster_authorized_operations: bool = ..., include_topic_authorized_operations: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ListOffsetsRequest(Struct):
    class ListOffsetsPartition(Struct):
        partition_index: int
        current_leader_epoch: int
        timestamp: int
        max_num_offsets: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., current_leader_epoch: int = ..., timestamp: int = ..., max_num_offsets: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class ListOffsetsTopic(Struct):
        name: str
        partitions: list[ListOffsetsRequest.ListOffsetsPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[ListOffsetsRequest.ListOffsetsPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    replica_id: int
    isolation_level: int
    topics: list[ListOffsetsRequest.ListOffsetsTopic]
    timeout_ms: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, replica_id: int = ..., isolation_level: int = ..., topics: list[ListOffsetsRequest.ListOffsetsTopic] = ..., timeout_ms: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class FetchRequest(Struct):
    class ReplicaState(Struct):
        replica_id: int
        replica_epoch: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, replica_id: int = ..., replica_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class FetchPartition(Struct):
        partition: int
        current_leader_epoch: int
        fetch_offset: int
        last_fetched_epoch: int
        log_start_offset: int
        partition_max_bytes: int
        replica_directory_id: str
        high_watermark: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition: int = ..., current_leader_epoch: int = ..., fetch_offset: int = ..., last_fetched_epoch: int = ..., log_start_offset: int = ..., partition_max_bytes: int = ..., replica_directory_id: str = ..., high_watermark: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class FetchTopic(Struct):
        topic: str
        topic_id: str
        partitions: list[FetchRequest.FetchPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., topic_id: str = ..., partitions: list[FetchRequest.FetchPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class ForgottenTopic(Struct):
        topic: str
        topic_id: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., topic_id: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    cluster_id: str | None
    replica_id: int
    replica_state: FetchRequest.ReplicaState | None
    max_wait_ms: int
    min_bytes: int
    max_bytes: int
    isolation_level: int
    session_id: int
    session_epoch: int
    topics: list[FetchRequest.FetchTopic]
    forgotten_topics_data: list[FetchRequest.ForgottenTopic]
    rack_id: str
    unknown_tagged_fields: dict | None
    def __init__(self, *, cluster_id: str | None = ..., replica_id: int = ..., replica_state: FetchRequest.ReplicaState | None = ..., max_wait_ms: int = ..., min_bytes: int = ..., max_bytes: int = ..., isolation_level: int = ..., session_id: int = ..., session_epoch: int = ..., topics: list[FetchRequest.FetchTopic] = ..., forgotten_topics_data: list[FetchRequest.ForgottenTopic] = ..., rack_id: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class FindCoordinatorRequest(Struct):
    key: str
    key_type: int
    coordinator_keys: list[str]
    unknown_tagged_fields: dict | None
    def __init__(self, *, key: str = ..., key_type: int = ..., coordinator_keys: list[str] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class OffsetCommitRequest(Struct):
    class OffsetCommitRequestPartition(Struct):
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        commit_timestamp: int
        committed_metadata: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., commit_timestamp: int = ..., committed_metadata: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetCommitRequestTopic(Struct):
        name: str
        topic_id: str
        partitions: list[OffsetCommitRequest.OffsetCommitRequestPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., partitions: list[OffsetCommitRequest.OffsetCommitRequestPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    group_id: str
    generation_id_or_member_epoch: int
    member_id: str
    group_instance_id: str | None
    retention_time_ms: int
    topics: list[OffsetCommitRequest.OffsetCommitRequestTopic]
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., generation_id_or_member_epoch: int = ..., member_id: str = ..., group_instance_id: str | None = ..., retention_time_ms: int = ..., topics: list[OffsetCommitRequest.OffsetCommitRequestTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class OffsetFetchRequest(Struct):
    class OffsetFetchRequestTopic(Struct):
        name: str
        partition_indexes: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partition_indexes: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetFetchRequestTopics(Struct):
        name: str
        topic_id: str
        partition_indexes: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., partition_indexes: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetFetchRequestGroup(Struct):
        group_id: str
        member_id: str | None
        member_epoch: int
        topics: list[OffsetFetchRequest.OffsetFetchRequestTopics] | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, group_id: str = ..., member_id: str | None = ..., member_epoch: int = ..., topics: list[OffsetFetchRequest.OffsetFetchRequestTopics] | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    group_id: str
    topics: list[OffsetFetchRequest.OffsetFetchRequestTopic] | None
    groups: list[OffsetFetchRequest.OffsetFetchRequestGroup]
    require_stable: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., topics: list[OffsetFetchRequest.OffsetFetchRequestTopic] | None = ..., groups: list[OffsetFetchRequest.OffsetFetchRequestGroup] = ..., require_stable: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class JoinGroupRequest(Struct):
    class JoinGroupRequestProtocol(Struct):
        name: str
        metadata: str | bytes
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., metadata: str | bytes = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    group_id: str
    session_timeout_ms: int
    rebalance_timeout_ms: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str
    protocols: list[JoinGroupRequest.JoinGroupRequestProtocol]
    reason: str | None
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., session_timeout_ms: int = ..., rebalance_timeout_ms: int = ..., member_id: str = ..., group_instance_id: str | None = ..., protocol_type: str = ..., protocols: list[JoinGroupRequest.JoinGroupRequestProtocol] = ..., reason: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class SyncGroupRequest(Struct):
    class SyncGroupRequestAssignment(Struct):
        member_id: str
        assignment: str | bytes
        unknown_tagged_fields: dict | None
        def __init__(self, *, member_id: str = ..., assignment: str | bytes = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    protocol_type: str | None
    protocol_name: str | None
    assignments: list[SyncGroupRequest.SyncGroupRequestAssignment]
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., generation_id: int = ..., member_id: str = ..., group_instance_id: str | None = ..., protocol_type: str | None = ..., protocol_name: str | None = ..., assignments: list[SyncGroupRequest.SyncGroupRequestAssignment] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class HeartbeatRequest(Struct):
    group_id: str
    generation_id: int
    member_id: str
    group_instance_id: str | None
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., generation_id: int = ..., member_id: str = ..., group_instance_id: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class LeaveGroupRequest(Struct):
    class MemberIdentity(Struct):
        member_id: str
        group_instance_id: str | None
        reason: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., reason: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    group_id: str
    member_id: str
    members: list[LeaveGroupRequest.MemberIdentity]
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., member_id: str = ..., members: list[LeaveGroupRequest.MemberIdentity] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ProduceRequest(Struct):
    class PartitionProduceData(Struct):
        index: int
        records: Any
        unknown_tagged_fields: dict | None
        def __init__(self, *, index: int = ..., records: Any = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class TopicProduceData(Struct):
        name: str
        topic_id: str
        partition_data: list[ProduceRequest.PartitionProduceData]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., partition_data: list[ProduceRequest.PartitionProduceData] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    transactional_id: str | None
    acks: int
    timeout_ms: int
    topic_data: list[ProduceRequest.TopicProduceData]
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_id: str | None = ..., acks: int = ..., timeout_ms: int = ..., topic_data: list[ProduceRequest.TopicProduceData] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class InitProducerIdRequest(Struct):
    transactional_id: str | None
    transaction_timeout_ms: int
    producer_id: int
    producer_epoch: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_id: str | None = ..., transaction_timeout_ms: int = ..., producer_id: int = ..., producer_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class AddPartitionsToTxnRequest(Struct):
    class AddPartitionsToTxnTopic(Struct):
        name: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class AddPartitionsToTxnTransaction(Struct):
        transactional_id: str
        producer_id: int
        producer_epoch: int
        verify_only: bool
        topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]
        unknown_tagged_fields: dict | None
        def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., verify_only: bool = ..., topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    transactions: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction]
    v3_and_below_transactional_id: str
    v3_and_below_producer_id: int
    v3_and_below_producer_epoch: int
    v3_and_below_topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic]
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactions: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTransaction] = ..., v3_and_below_transactional_id: str = ..., v3_and_below_producer_id: int = ..., v3_and_below_producer_epoch: int = ..., v3_and_below_topics: list[AddPartitionsToTxnRequest.AddPartitionsToTxnTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class EndTxnRequest(Struct):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    committed: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., committed: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class CreateTopicsRequest(Struct):
    class CreatableReplicaAssignment(Struct):
        partition_index: int
        broker_ids: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., broker_ids: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class CreatableTopicConfig(Struct):
        name: str
        value: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., value: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class CreatableTopic(Struct):
        name: str
        num_partitions: int
        replication_factor: int
        assignments: list[CreateTopicsRequest.CreatableReplicaAssignment]
        configs: list[CreateTopicsRequest.CreatableTopicConfig]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., num_partitions: int = ..., replication_factor: int = ..., assignments: list[CreateTopicsRequest.CreatableReplicaAssignment] = ..., configs: list[CreateTopicsRequest.CreatableTopicConfig] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[CreateTopicsRequest.CreatableTopic]
    timeout_ms: int
    validate_only: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[CreateTopicsRequest.CreatableTopic] = ..., timeout_ms: int = ..., validate_only: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ListGroupsRequest(Struct):
    states_filter: list[str]
    types_filter: list[str]
    unknown_tagged_fields: dict | None
    def __init__(self, *, states_filter: list[str] = ..., types_filter: list[str] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeGroupsRequest(Struct):
    groups: list[str]
    include_authorized_operations: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, groups: list[str] = ..., include_authorized_operations: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeConfigsRequest(Struct):
    class DescribeConfigsResource(Struct):
        resource_type: int
        resource_name: str
        configuration_keys: list[str] | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, resource_type: int = ..., resource_name: str = ..., configuration_keys: list[str] | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    resources: list[DescribeConfigsRequest.DescribeConfigsResource]
    include_synonyms: bool
    include_documentation: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, resources: list[DescribeConfigsRequest.DescribeConfigsResource] = ..., include_synonyms: bool = ..., include_documentation: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeClusterRequest(Struct):
    include_cluster_authorized_operations: bool
    endpoint_type: int
    include_fenced_brokers: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, include_cluster_authorized_operations: bool = ..., endpoint_type: int = ..., include_fenced_brokers: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeLogDirsRequest(Struct):
    class DescribableLogDirTopic(Struct):
        topic: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[DescribeLogDirsRequest.DescribableLogDirTopic] | None
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[DescribeLogDirsRequest.DescribableLogDirTopic] | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class OffsetForLeaderEpochRequest(Struct):
    class OffsetForLeaderPartition(Struct):
        partition: int
        current_leader_epoch: int
        leader_epoch: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition: int = ..., current_leader_epoch: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetForLeaderTopic(Struct):
        topic: str
        partitions: list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., partitions: list[OffsetForLeaderEpochRequest.OffsetForLeaderPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    replica_id: int
    topics: list[OffsetForLeaderEpochRequest.OffsetForLeaderTopic]
    unknown_tagged_fields: dict | None
    def __init__(self, *, replica_id: int = ..., topics: list[OffsetForLeaderEpochRequest.OffsetForLeaderTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeProducersRequest(Struct):
    class TopicRequest(Struct):
        name: str
        partition_indexes: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partition_indexes: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[DescribeProducersRequest.TopicRequest]
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[DescribeProducersRequest.TopicRequest] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ListTransactionsRequest(Struct):
    state_filters: list[str]
    producer_id_filters: list[int]
    duration_filter: int
    transactional_id_pattern: str | None
    unknown_tagged_fields: dict | None
    def __init__(self, *, state_filters: list[str] = ..., producer_id_filters: list[int] = ..., duration_filter: int = ..., transactional_id_pattern: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeTransactionsRequest(Struct):
    transactional_ids: list[str]
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_ids: list[str] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class AddOffsetsToTxnRequest(Struct):
    transactional_id: str
    producer_id: int
    producer_epoch: int
    group_id: str
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., group_id: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class TxnOffsetCommitRequest(Struct):
    class TxnOffsetCommitRequestPartition(Struct):
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        committed_metadata: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., committed_metadata: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class TxnOffsetCommitRequestTopic(Struct):
        name: str
        partitions: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    transactional_id: str
    group_id: str
    producer_id: int
    producer_epoch: int
    generation_id: int
    member_id: str
    group_instance_id: str | None
    topics: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic]
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_id: str = ..., group_id: str = ..., producer_id: int = ..., producer_epoch: int = ..., generation_id: int = ..., member_id: str = ..., group_instance_id: str | None = ..., topics: list[TxnOffsetCommitRequest.TxnOffsetCommitRequestTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DeleteRecordsRequest(Struct):
    class DeleteRecordsPartition(Struct):
        partition_index: int
        offset: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., offset: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DeleteRecordsTopic(Struct):
        name: str
        partitions: list[DeleteRecordsRequest.DeleteRecordsPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[DeleteRecordsRequest.DeleteRecordsPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[DeleteRecordsRequest.DeleteRecordsTopic]
    timeout_ms: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[DeleteRecordsRequest.DeleteRecordsTopic] = ..., timeout_ms: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DeleteTopicsRequest(Struct):
    class DeleteTopicState(Struct):
        name: str | None
        topic_id: str
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str | None = ..., topic_id: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[DeleteTopicsRequest.DeleteTopicState]
    topic_names: list[str]
    timeout_ms: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[DeleteTopicsRequest.DeleteTopicState] = ..., topic_names: list[str] = ..., timeout_ms: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class CreatePartitionsRequest(Struct):
    class CreatePartitionsAssignment(Struct):
        broker_ids: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, broker_ids: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class CreatePartitionsTopic(Struct):
        name: str
        count: int
        assignments: list[CreatePartitionsRequest.CreatePartitionsAssignment] | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., count: int = ..., assignments: list[CreatePartitionsRequest.CreatePartitionsAssignment] | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    topics: list[CreatePartitionsRequest.CreatePartitionsTopic]
    timeout_ms: int
    validate_only: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, topics: list[CreatePartitionsRequest.CreatePartitionsTopic] = ..., timeout_ms: int = ..., validate_only: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ConsumerGroupHeartbeatRequest(Struct):
    class TopicPartitions(Struct):
        topic_id: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic_id: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    group_id: str
    member_id: str
    member_epoch: int
    instance_id: str | None
    rack_id: str | None
    rebalance_timeout_ms: int
    subscribed_topic_names: list[str] | None
    subscribed_topic_regex: str | None
    server_assignor: str | None
    topic_partitions: list[ConsumerGroupHeartbeatRequest.TopicPartitions] | None
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_id: str = ..., member_id: str = ..., member_epoch: int = ..., instance_id: str | None = ..., rack_id: str | None = ..., rebalance_timeout_ms: int = ..., subscribed_topic_names: list[str] | None = ..., subscribed_topic_regex: str | None = ..., server_assignor: str | None = ..., topic_partitions: list[ConsumerGroupHeartbeatRequest.TopicPartitions] | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ConsumerGroupDescribeRequest(Struct):
    group_ids: list[str]
    include_authorized_operations: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, group_ids: list[str] = ..., include_authorized_operations: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ApiVersionsResponse(Struct):
    class ApiVersion(Struct):
        api_key: int
        min_version: int
        max_version: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, api_key: int = ..., min_version: int = ..., max_version: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class SupportedFeatureKey(Struct):
        name: str
        min_version: int
        max_version: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., min_version: int = ..., max_version: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class FinalizedFeatureKey(Struct):
        name: str
        max_version_level: int
        min_version_level: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., max_version_level: int = ..., min_version_level: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    error_code: int
    api_keys: list[ApiVersionsResponse.ApiVersion]
    throttle_time_ms: int
    supported_features: list[ApiVersionsResponse.SupportedFeatureKey]
    finalized_features_epoch: int
    finalized_features: list[ApiVersionsResponse.FinalizedFeatureKey]
    zk_migration_ready: bool
    unknown_tagged_fields: dict | None
    def __init__(self, *, error_code: int = ..., api_keys: list[ApiVersionsResponse.ApiVersion] = ..., throttle_time_ms: int = ..., supported_features: list[ApiVersionsResponse.SupportedFeatureKey] = ..., finalized_features_epoch: int = ..., finalized_features: list[ApiVersionsResponse.FinalizedFeatureKey] = ..., zk_migration_ready: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class MetadataResponse(Struct):
    class MetadataResponseBroker(Struct):
        node_id: int
        host: str
        port: int
        rack: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class MetadataResponsePartition(Struct):
        error_code: int
        partition_index: int
        leader_id: int
        leader_epoch: int
        replica_nodes: list[int]
        isr_nodes: list[int]
        offline_replicas: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., partition_index: int = ..., leader_id: int = ..., leader_epoch: int = ..., replica_nodes: list[int] = ..., isr_nodes: list[int] = ..., offline_replicas: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class MetadataResponseTopic(Struct):
        error_code: int
        name: str | None
        topic_id: str
        is_internal: bool
        partitions: list[MetadataResponse.MetadataResponsePartition]
        topic_authorized_operations: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., name: str | None = ..., topic_id: str = ..., is_internal: bool = ..., partitions: list[MetadataResponse.MetadataResponsePartition] = ..., topic_authorized_operations: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    brokers: list[MetadataResponse.MetadataResponseBroker]
    cluster_id: str | None
    controller_id: int
    topics: list[MetadataResponse.MetadataResponseTopic]
    cluster_authorized_operations: int
    error_code: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., brokers: list[MetadataResponse.MetadataResponseBroker] = ..., cluster_id: str | None = ..., controller_id: int = ..., topics: list[MetadataResponse.MetadataResponseTopic] = ..., cluster_authorized_operations: int = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ListOffsetsResponse(Struct):
    class ListOffsetsPartitionResponse(Struct):
        partition_index: int
        error_code: int
        old_style_offsets: list[int]
        timestamp: int
        offset: int
        leader_epoch: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., error_code: int = ..., old_style_offsets: list[int] = ..., timestamp: int = ..., offset: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class ListOffsetsTopicResponse(Struct):
        name: str
        partitions: list[ListOffsetsResponse.ListOffsetsPartitionResponse]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[ListOffsetsResponse.ListOffsetsPartitionResponse] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[ListOffsetsResponse.ListOffsetsTopicResponse]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[ListOffsetsResponse.ListOffsetsTopicResponse] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class FetchResponse(Struct):
    class EpochEndOffset(Struct):
        epoch: int
        end_offset: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, epoch: int = ..., end_offset: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class LeaderIdAndEpoch(Struct):
        leader_id: int
        leader_epoch: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, leader_id: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class SnapshotId(Struct):
        end_offset: int
        epoch: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, end_offset: int = ..., epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class AbortedTransaction(Struct):
        producer_id: int
        first_offset: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, producer_id: int = ..., first_offset: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class PartitionData(Struct):
        partition_index: int
        error_code: int
        high_watermark: int
        last_stable_offset: int
        log_start_offset: int
        diverging_epoch: FetchResponse.EpochEndOffset | None
        current_leader: FetchResponse.LeaderIdAndEpoch | None
        snapshot_id: FetchResponse.SnapshotId | None
        aborted_transactions: list[FetchResponse.AbortedTransaction] | None
        preferred_read_replica: int
        records: Any
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., error_code: int = ..., high_watermark: int = ..., last_stable_offset: int = ..., log_start_offset: int = ..., diverging_epoch: FetchResponse.EpochEndOffset | None = ..., current_leader: FetchResponse.LeaderIdAndEpoch | None = ..., snapshot_id: FetchResponse.SnapshotId | None = ..., aborted_transactions: list[FetchResponse.AbortedTransaction] | None = ..., preferred_read_replica: int = ..., records: Any = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class FetchableTopicResponse(Struct):
        topic: str
        topic_id: str
        partitions: list[FetchResponse.PartitionData]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., topic_id: str = ..., partitions: list[FetchResponse.PartitionData] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class NodeEndpoint(Struct):
        node_id: int
        host: str
        port: int
        rack: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    session_id: int
    responses: list[FetchResponse.FetchableTopicResponse]
    node_endpoints: list[FetchResponse.NodeEndpoint]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., session_id: int = ..., responses: list[FetchResponse.FetchableTopicResponse] = ..., node_endpoints: list[FetchResponse.NodeEndpoint] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class FindCoordinatorResponse(Struct):
    class Coordinator(Struct):
        key: str
        node_id: int
        host: str
        port: int
        error_code: int
        error_message: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, key: str = ..., node_id: int = ..., host: str = ..., port: int = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    node_id: int
    host: str
    port: int
    coordinators: list[FindCoordinatorResponse.Coordinator]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., node_id: int = ..., host: str = ..., port: int = ..., coordinators: list[FindCoordinatorResponse.Coordinator] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class OffsetCommitResponse(Struct):
    class OffsetCommitResponsePartition(Struct):
        partition_index: int
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetCommitResponseTopic(Struct):
        name: str
        topic_id: str
        partitions: list[OffsetCommitResponse.OffsetCommitResponsePartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., partitions: list[OffsetCommitResponse.OffsetCommitResponsePartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[OffsetCommitResponse.OffsetCommitResponseTopic]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[OffsetCommitResponse.OffsetCommitResponseTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class OffsetFetchResponse(Struct):
    class OffsetFetchResponsePartition(Struct):
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        metadata: str | None
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., metadata: str | None = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetFetchResponseTopic(Struct):
        name: str
        partitions: list[OffsetFetchResponse.OffsetFetchResponsePartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[OffsetFetchResponse.OffsetFetchResponsePartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetFetchResponsePartitions(Struct):
        partition_index: int
        committed_offset: int
        committed_leader_epoch: int
        metadata: str | None
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., committed_offset: int = ..., committed_leader_epoch: int = ..., metadata: str | None = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetFetchResponseTopics(Struct):
        name: str
        topic_id: str
        partitions: list[OffsetFetchResponse.OffsetFetchResponsePartitions]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., partitions: list[OffsetFetchResponse.OffsetFetchResponsePartitions] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetFetchResponseGroup(Struct):
        group_id: str
        topics: list[OffsetFetchResponse.OffsetFetchResponseTopics]
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, group_id: str = ..., topics: list[OffsetFetchResponse.OffsetFetchResponseTopics] = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[OffsetFetchResponse.OffsetFetchResponseTopic]
    error_code: int
    groups: list[OffsetFetchResponse.OffsetFetchResponseGroup]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[OffsetFetchResponse.OffsetFetchResponseTopic] = ..., error_code: int = ..., groups: list[OffsetFetchResponse.OffsetFetchResponseGroup] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class JoinGroupResponse(Struct):
    class JoinGroupResponseMember(Struct):
        member_id: str
        group_instance_id: str | None
        metadata: str | bytes
        unknown_tagged_fields: dict | None
        def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., metadata: str | bytes = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    generation_id: int
    protocol_type: str | None
    protocol_name: str | None
    leader: str
    skip_assignment: bool
    member_id: str
    members: list[JoinGroupResponse.JoinGroupResponseMember]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., generation_id: int = ..., protocol_type: str | None = ..., protocol_name: str | None = ..., leader: str = ..., skip_assignment: bool = ..., member_id: str = ..., members: list[JoinGroupResponse.JoinGroupResponseMember] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class SyncGroupResponse(Struct):
    throttle_time_ms: int
    error_code: int
    protocol_type: str | None
    protocol_name: str | None
    assignment: str | bytes
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., protocol_type: str | None = ..., protocol_name: str | None = ..., assignment: str | bytes = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class HeartbeatResponse(Struct):
    throttle_time_ms: int
    error_code: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class LeaveGroupResponse(Struct):
    class MemberResponse(Struct):
        member_id: str
        group_instance_id: str | None
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    members: list[LeaveGroupResponse.MemberResponse]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., members: list[LeaveGroupResponse.MemberResponse] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ProduceResponse(Struct):
    class BatchIndexAndErrorMessage(Struct):
        batch_index: int
        batch_index_error_message: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, batch_index: int = ..., batch_index_error_message: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class LeaderIdAndEpoch(Struct):
        leader_id: int
        leader_epoch: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, leader_id: int = ..., leader_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class PartitionProduceResponse(Struct):
        index: int
        error_code: int
        base_offset: int
        log_append_time_ms: int
        log_start_offset: int
        record_errors: list[ProduceResponse.BatchIndexAndErrorMessage]
        error_message: str | None
        current_leader: ProduceResponse.LeaderIdAndEpoch | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, index: int = ..., error_code: int = ..., base_offset: int = ..., log_append_time_ms: int = ..., log_start_offset: int = ..., record_errors: list[ProduceResponse.BatchIndexAndErrorMessage] = ..., error_message: str | None = ..., current_leader: ProduceResponse.LeaderIdAndEpoch | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class TopicProduceResponse(Struct):
        name: str
        topic_id: str
        partition_responses: list[ProduceResponse.PartitionProduceResponse]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., partition_responses: list[ProduceResponse.PartitionProduceResponse] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class NodeEndpoint(Struct):
        node_id: int
        host: str
        port: int
        rack: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, node_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    responses: list[ProduceResponse.TopicProduceResponse]
    throttle_time_ms: int
    node_endpoints: list[ProduceResponse.NodeEndpoint]
    unknown_tagged_fields: dict | None
    def __init__(self, *, responses: list[ProduceResponse.TopicProduceResponse] = ..., throttle_time_ms: int = ..., node_endpoints: list[ProduceResponse.NodeEndpoint] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class InitProducerIdResponse(Struct):
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., producer_id: int = ..., producer_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class AddPartitionsToTxnResponse(Struct):
    class AddPartitionsToTxnPartitionResult(Struct):
        partition_index: int
        partition_error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., partition_error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class AddPartitionsToTxnTopicResult(Struct):
        name: str
        results_by_partition: list[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., results_by_partition: list[AddPartitionsToTxnResponse.AddPartitionsToTxnPartitionResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class AddPartitionsToTxnResult(Struct):
        transactional_id: str
        topic_results: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]
        unknown_tagged_fields: dict | None
        def __init__(self, *, transactional_id: str = ..., topic_results: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    results_by_transaction: list[AddPartitionsToTxnResponse.AddPartitionsToTxnResult]
    results_by_topic_v3_and_below: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., results_by_transaction: list[AddPartitionsToTxnResponse.AddPartitionsToTxnResult] = ..., results_by_topic_v3_and_below: list[AddPartitionsToTxnResponse.AddPartitionsToTxnTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class EndTxnResponse(Struct):
    throttle_time_ms: int
    error_code: int
    producer_id: int
    producer_epoch: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., producer_id: int = ..., producer_epoch: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class CreateTopicsResponse(Struct):
    class CreatableTopicConfigs(Struct):
        name: str
        value: str | None
        read_only: bool
        config_source: int
        is_sensitive: bool
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., value: str | None = ..., read_only: bool = ..., config_source: int = ..., is_sensitive: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class CreatableTopicResult(Struct):
        name: str
        topic_id: str
        error_code: int
        error_message: str | None
        topic_config_error_code: int
        num_partitions: int
        replication_factor: int
        configs: list[CreateTopicsResponse.CreatableTopicConfigs] | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., topic_id: str = ..., error_code: int = ..., error_message: str | None = ..., topic_config_error_code: int = ..., num_partitions: int = ..., replication_factor: int = ..., configs: list[CreateTopicsResponse.CreatableTopicConfigs] | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[CreateTopicsResponse.CreatableTopicResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[CreateTopicsResponse.CreatableTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ListGroupsResponse(Struct):
    class ListedGroup(Struct):
        group_id: str
        protocol_type: str
        group_state: str
        group_type: str
        unknown_tagged_fields: dict | None
        def __init__(self, *, group_id: str = ..., protocol_type: str = ..., group_state: str = ..., group_type: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    groups: list[ListGroupsResponse.ListedGroup]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., groups: list[ListGroupsResponse.ListedGroup] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeGroupsResponse(Struct):
    class DescribedGroupMember(Struct):
        member_id: str
        group_instance_id: str | None
        client_id: str
        client_host: str
        member_metadata: str | bytes
        member_assignment: str | bytes
        unknown_tagged_fields: dict | None
        def __init__(self, *, member_id: str = ..., group_instance_id: str | None = ..., client_id: str = ..., client_host: str = ..., member_metadata: str | bytes = ..., member_assignment: str | bytes = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DescribedGroup(Struct):
        error_code: int
        error_message: str | None
        group_id: str
        group_state: str
        protocol_type: str
        protocol_data: str
        members: list[DescribeGroupsResponse.DescribedGroupMember]
        authorized_operations: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., error_message: str | None = ..., group_id: str = ..., group_state: str = ..., protocol_type: str = ..., protocol_data: str = ..., members: list[DescribeGroupsResponse.DescribedGroupMember] = ..., authorized_operations: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    groups: list[DescribeGroupsResponse.DescribedGroup]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., groups: list[DescribeGroupsResponse.DescribedGroup] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeConfigsResponse(Struct):
    class DescribeConfigsSynonym(Struct):
        name: str
        value: str | None
        source: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., value: str | None = ..., source: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DescribeConfigsResourceResult(Struct):
        name: str
        value: str | None
        read_only: bool
        config_source: int
        is_default: bool
        is_sensitive: bool
        synonyms: list[DescribeConfigsResponse.DescribeConfigsSynonym]
        config_type: int
        documentation: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., value: str | None = ..., read_only: bool = ..., config_source: int = ..., is_default: bool = ..., is_sensitive: bool = ..., synonyms: list[DescribeConfigsResponse.DescribeConfigsSynonym] = ..., config_type: int = ..., documentation: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DescribeConfigsResult(Struct):
        error_code: int
        error_message: str | None
        resource_type: int
        resource_name: str
        configs: list[DescribeConfigsResponse.DescribeConfigsResourceResult]
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., error_message: str | None = ..., resource_type: int = ..., resource_name: str = ..., configs: list[DescribeConfigsResponse.DescribeConfigsResourceResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    results: list[DescribeConfigsResponse.DescribeConfigsResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., results: list[DescribeConfigsResponse.DescribeConfigsResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeClusterResponse(Struct):
    class DescribeClusterBroker(Struct):
        broker_id: int
        host: str
        port: int
        rack: str | None
        is_fenced: bool
        unknown_tagged_fields: dict | None
        def __init__(self, *, broker_id: int = ..., host: str = ..., port: int = ..., rack: str | None = ..., is_fenced: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    endpoint_type: int
    cluster_id: str
    controller_id: int
    brokers: list[DescribeClusterResponse.DescribeClusterBroker]
    cluster_authorized_operations: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., endpoint_type: int = ..., cluster_id: str = ..., controller_id: int = ..., brokers: list[DescribeClusterResponse.DescribeClusterBroker] = ..., cluster_authorized_operations: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeLogDirsResponse(Struct):
    class DescribeLogDirsPartition(Struct):
        partition_index: int
        partition_size: int
        offset_lag: int
        is_future_key: bool
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., partition_size: int = ..., offset_lag: int = ..., is_future_key: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DescribeLogDirsTopic(Struct):
        name: str
        partitions: list[DescribeLogDirsResponse.DescribeLogDirsPartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[DescribeLogDirsResponse.DescribeLogDirsPartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DescribeLogDirsResult(Struct):
        error_code: int
        log_dir: str
        topics: list[DescribeLogDirsResponse.DescribeLogDirsTopic]
        total_bytes: int
        usable_bytes: int
        is_cordoned: bool
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., log_dir: str = ..., topics: list[DescribeLogDirsResponse.DescribeLogDirsTopic] = ..., total_bytes: int = ..., usable_bytes: int = ..., is_cordoned: bool = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    results: list[DescribeLogDirsResponse.DescribeLogDirsResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., results: list[DescribeLogDirsResponse.DescribeLogDirsResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class OffsetForLeaderEpochResponse(Struct):
    class EpochEndOffset(Struct):
        error_code: int
        partition: int
        leader_epoch: int
        end_offset: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., partition: int = ..., leader_epoch: int = ..., end_offset: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class OffsetForLeaderTopicResult(Struct):
        topic: str
        partitions: list[OffsetForLeaderEpochResponse.EpochEndOffset]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., partitions: list[OffsetForLeaderEpochResponse.EpochEndOffset] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[OffsetForLeaderEpochResponse.OffsetForLeaderTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeProducersResponse(Struct):
    class ProducerState(Struct):
        producer_id: int
        producer_epoch: int
        last_sequence: int
        last_timestamp: int
        coordinator_epoch: int
        current_txn_start_offset: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, producer_id: int = ..., producer_epoch: int = ..., last_sequence: int = ..., last_timestamp: int = ..., coordinator_epoch: int = ..., current_txn_start_offset: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class PartitionResponse(Struct):
        partition_index: int
        error_code: int
        error_message: str | None
        active_producers: list[DescribeProducersResponse.ProducerState]
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., error_code: int = ..., error_message: str | None = ..., active_producers: list[DescribeProducersResponse.ProducerState] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class TopicResponse(Struct):
        name: str
        partitions: list[DescribeProducersResponse.PartitionResponse]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[DescribeProducersResponse.PartitionResponse] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[DescribeProducersResponse.TopicResponse]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[DescribeProducersResponse.TopicResponse] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ListTransactionsResponse(Struct):
    class TransactionState(Struct):
        transactional_id: str
        producer_id: int
        transaction_state: str
        unknown_tagged_fields: dict | None
        def __init__(self, *, transactional_id: str = ..., producer_id: int = ..., transaction_state: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    unknown_state_filters: list[str]
    transaction_states: list[ListTransactionsResponse.TransactionState]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., unknown_state_filters: list[str] = ..., transaction_states: list[ListTransactionsResponse.TransactionState] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DescribeTransactionsResponse(Struct):
    class TopicData(Struct):
        topic: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class TransactionState(Struct):
        error_code: int
        transactional_id: str
        transaction_state: str
        transaction_timeout_ms: int
        transaction_start_time_ms: int
        producer_id: int
        producer_epoch: int
        topics: list[DescribeTransactionsResponse.TopicData]
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., transactional_id: str = ..., transaction_state: str = ..., transaction_timeout_ms: int = ..., transaction_start_time_ms: int = ..., producer_id: int = ..., producer_epoch: int = ..., topics: list[DescribeTransactionsResponse.TopicData] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    transaction_states: list[DescribeTransactionsResponse.TransactionState]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., transaction_states: list[DescribeTransactionsResponse.TransactionState] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class AddOffsetsToTxnResponse(Struct):
    throttle_time_ms: int
    error_code: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class TxnOffsetCommitResponse(Struct):
    class TxnOffsetCommitResponsePartition(Struct):
        partition_index: int
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class TxnOffsetCommitResponseTopic(Struct):
        name: str
        partitions: list[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[TxnOffsetCommitResponse.TxnOffsetCommitResponsePartition] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[TxnOffsetCommitResponse.TxnOffsetCommitResponseTopic] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DeleteRecordsResponse(Struct):
    class DeleteRecordsPartitionResult(Struct):
        partition_index: int
        low_watermark: int
        error_code: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, partition_index: int = ..., low_watermark: int = ..., error_code: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DeleteRecordsTopicResult(Struct):
        name: str
        partitions: list[DeleteRecordsResponse.DeleteRecordsPartitionResult]
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., partitions: list[DeleteRecordsResponse.DeleteRecordsPartitionResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    topics: list[DeleteRecordsResponse.DeleteRecordsTopicResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., topics: list[DeleteRecordsResponse.DeleteRecordsTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class DeleteTopicsResponse(Struct):
    class DeletableTopicResult(Struct):
        name: str | None
        topic_id: str
        error_code: int
        error_message: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str | None = ..., topic_id: str = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    responses: list[DeleteTopicsResponse.DeletableTopicResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., responses: list[DeleteTopicsResponse.DeletableTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class CreatePartitionsResponse(Struct):
    class CreatePartitionsTopicResult(Struct):
        name: str
        error_code: int
        error_message: str | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, name: str = ..., error_code: int = ..., error_message: str | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    results: list[CreatePartitionsResponse.CreatePartitionsTopicResult]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., results: list[CreatePartitionsResponse.CreatePartitionsTopicResult] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ConsumerGroupHeartbeatResponse(Struct):
    class TopicPartitions(Struct):
        topic_id: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic_id: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class Assignment(Struct):
        topic_partitions: list[ConsumerGroupHeartbeatResponse.TopicPartitions]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic_partitions: list[ConsumerGroupHeartbeatResponse.TopicPartitions] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    error_code: int
    error_message: str | None
    member_id: str | None
    member_epoch: int
    heartbeat_interval_ms: int
    assignment: ConsumerGroupHeartbeatResponse.Assignment | None
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., error_code: int = ..., error_message: str | None = ..., member_id: str | None = ..., member_epoch: int = ..., heartbeat_interval_ms: int = ..., assignment: ConsumerGroupHeartbeatResponse.Assignment | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class ConsumerGroupDescribeResponse(Struct):
    class TopicPartitions(Struct):
        topic_id: str
        topic_name: str
        partitions: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic_id: str = ..., topic_name: str = ..., partitions: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class Assignment(Struct):
        topic_partitions: list[ConsumerGroupDescribeResponse.TopicPartitions]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic_partitions: list[ConsumerGroupDescribeResponse.TopicPartitions] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class Member(Struct):
        member_id: str
        instance_id: str | None
        rack_id: str | None
        member_epoch: int
        client_id: str
        client_host: str
        subscribed_topic_names: list[str]
        subscribed_topic_regex: str | None
        assignment: ConsumerGroupDescribeResponse.Assignment | None
        target_assignment: ConsumerGroupDescribeResponse.Assignment | None
        unknown_tagged_fields: dict | None
        def __init__(self, *, member_id: str = ..., instance_id: str | None = ..., rack_id: str | None = ..., member_epoch: int = ..., client_id: str = ..., client_host: str = ..., subscribed_topic_names: list[str] = ..., subscribed_topic_regex: str | None = ..., assignment: ConsumerGroupDescribeResponse.Assignment | None = ..., target_assignment: ConsumerGroupDescribeResponse.Assignment | None = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    class DescribedGroup(Struct):
        error_code: int
        error_message: str | None
        group_id: str
        group_state: str
        group_epoch: int
        assignment_epoch: int
        assignor_name: str
        members: list[ConsumerGroupDescribeResponse.Member]
        authorized_operations: int
        unknown_tagged_fields: dict | None
        def __init__(self, *, error_code: int = ..., error_message: str | None = ..., group_id: str = ..., group_state: str = ..., group_epoch: int = ..., assignment_epoch: int = ..., assignor_name: str = ..., members: list[ConsumerGroupDescribeResponse.Member] = ..., authorized_operations: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    throttle_time_ms: int
    groups: list[ConsumerGroupDescribeResponse.DescribedGroup]
    unknown_tagged_fields: dict | None
    def __init__(self, *, throttle_time_ms: int = ..., groups: list[ConsumerGroupDescribeResponse.DescribedGroup] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class TransactionLogKey(Struct):
    transactional_id: str
    unknown_tagged_fields: dict | None
    def __init__(self, *, transactional_id: str = ..., unknown_tagged_fields: dict | None = ...) -> None: ...


class TransactionLogValue(Struct):
    class PartitionsSchema(Struct):
        topic: str
        partition_ids: list[int]
        unknown_tagged_fields: dict | None
        def __init__(self, *, topic: str = ..., partition_ids: list[int] = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
    producer_id: int
    previous_producer_id: int
    next_producer_id: int
    producer_epoch: int
    next_producer_epoch: int
    transaction_timeout_ms: int
    transaction_status: int
    transaction_partitions: list[TransactionLogValue.PartitionsSchema] | None
    transaction_last_update_timestamp_ms: int
    transaction_start_timestamp_ms: int
    client_transaction_version: int
    unknown_tagged_fields: dict | None
    def __init__(self, *, producer_id: int = ..., previous_producer_id: int = ..., next_producer_id: int = ..., producer_epoch: int = ..., next_producer_epoch: int = ..., transaction_timeout_ms: int = ..., transaction_status: int = ..., transaction_partitions: list[TransactionLogValue.PartitionsSchema] | None = ..., transaction_last_update_timestamp_ms: int = ..., transaction_start_timestamp_ms: int = ..., client_transaction_version: int = ..., unknown_tagged_fields: dict | None = ...) -> None: ...
