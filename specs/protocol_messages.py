"""The Kafka protocol messages the replay broker speaks: field facts (names, types, versions, tags,
defaults, api keys) carried over from apache/kafka's clients/src/main/resources/common/message
definitions into :mod:`specs.message_schema`'s declarative form."""
import re
from enum import IntEnum
from typing import Any

from .message_schema import F, Message

RequestHeader = Message('RequestHeader', valid='0-2', flexible='2+', fields=(
    F('RequestApiKey', 'int16', '0+'),
    F('RequestApiVersion', 'int16', '0+'),
    F('CorrelationId', 'int32', '0+'),
    F('ClientId', 'string', '1+', nullable='1+', flexible='none'),
))

ResponseHeader = Message('ResponseHeader', valid='0-1', flexible='1+', fields=(
    F('CorrelationId', 'int32', '0+'),
))

ApiVersionsRequest = Message('ApiVersionsRequest', valid='0-4', flexible='3+', api_key=18, fields=(
    F('ClientSoftwareName', 'string', '3+'),
    F('ClientSoftwareVersion', 'string', '3+'),
))

ApiVersionsResponse = Message('ApiVersionsResponse', valid='0-4', flexible='3+', api_key=18, fields=(
    F('ErrorCode', 'int16', '0+'),
    F('ApiKeys', '[]ApiVersion', '0+', fields=(
        F('ApiKey', 'int16', '0+'),
        F('MinVersion', 'int16', '0+'),
        F('MaxVersion', 'int16', '0+'),
    )),
    F('ThrottleTimeMs', 'int32', '1+'),
    F('SupportedFeatures', '[]SupportedFeatureKey', '3+', tagged='3+', tag=0, fields=(
        F('Name', 'string', '3+'),
        F('MinVersion', 'int16', '3+'),
        F('MaxVersion', 'int16', '3+'),
    )),
    F('FinalizedFeaturesEpoch', 'int64', '3+', tagged='3+', tag=1, default='-1'),
    F('FinalizedFeatures', '[]FinalizedFeatureKey', '3+', tagged='3+', tag=2, fields=(
        F('Name', 'string', '3+'),
        F('MaxVersionLevel', 'int16', '3+'),
        F('MinVersionLevel', 'int16', '3+'),
    )),
    F('ZkMigrationReady', 'bool', '3+', tagged='3+', tag=3, default='false'),
))

MetadataRequest = Message('MetadataRequest', valid='0-13', flexible='9+', api_key=3, fields=(
    F('Topics', '[]MetadataRequestTopic', '0+', nullable='1+', fields=(
        F('TopicId', 'uuid', '10+'),
        F('Name', 'string', '0+', nullable='10+'),
    )),
    F('AllowAutoTopicCreation', 'bool', '4+', default='true'),
    F('IncludeClusterAuthorizedOperations', 'bool', '8-10'),
    F('IncludeTopicAuthorizedOperations', 'bool', '8+'),
))

MetadataResponse = Message('MetadataResponse', valid='0-13', flexible='9+', api_key=3, fields=(
    F('ThrottleTimeMs', 'int32', '3+'),
    F('Brokers', '[]MetadataResponseBroker', '0+', fields=(
        F('NodeId', 'int32', '0+'),
        F('Host', 'string', '0+'),
        F('Port', 'int32', '0+'),
        F('Rack', 'string', '1+', nullable='1+', default='null'),
    )),
    F('ClusterId', 'string', '2+', nullable='2+', default='null'),
    F('ControllerId', 'int32', '1+', default='-1'),
    F('Topics', '[]MetadataResponseTopic', '0+', fields=(
        F('ErrorCode', 'int16', '0+'),
        F('Name', 'string', '0+', nullable='12+'),
        F('TopicId', 'uuid', '10+'),
        F('IsInternal', 'bool', '1+', default='false'),
        F('Partitions', '[]MetadataResponsePartition', '0+', fields=(
            F('ErrorCode', 'int16', '0+'),
            F('PartitionIndex', 'int32', '0+'),
            F('LeaderId', 'int32', '0+'),
            F('LeaderEpoch', 'int32', '7+', default='-1'),
            F('ReplicaNodes', '[]int32', '0+'),
            F('IsrNodes', '[]int32', '0+'),
            F('OfflineReplicas', '[]int32', '5+'),
        )),
        F('TopicAuthorizedOperations', 'int32', '8+', default='-2147483648'),
    )),
    F('ClusterAuthorizedOperations', 'int32', '8-10', default='-2147483648'),
    F('ErrorCode', 'int16', '13+'),
))

ListOffsetsRequest = Message('ListOffsetsRequest', valid='1-11', flexible='6+', api_key=2, fields=(
    F('ReplicaId', 'int32', '0+'),
    F('IsolationLevel', 'int8', '2+'),
    F('Topics', '[]ListOffsetsTopic', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]ListOffsetsPartition', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('CurrentLeaderEpoch', 'int32', '4+', default='-1'),
            F('Timestamp', 'int64', '0+'),
            F('MaxNumOffsets', 'int32', '0', default='1'),
        )),
    )),
    F('TimeoutMs', 'int32', '10+'),
))

ListOffsetsResponse = Message('ListOffsetsResponse', valid='1-11', flexible='6+', api_key=2, fields=(
    F('ThrottleTimeMs', 'int32', '2+'),
    F('Topics', '[]ListOffsetsTopicResponse', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]ListOffsetsPartitionResponse', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
            F('OldStyleOffsets', '[]int64', '0'),
            F('Timestamp', 'int64', '1+', default='-1'),
            F('Offset', 'int64', '1+', default='-1'),
            F('LeaderEpoch', 'int32', '4+', default='-1'),
        )),
    )),
))

FetchRequest = Message('FetchRequest', valid='4-18', flexible='12+', api_key=1, fields=(
    F('ClusterId', 'string', '12+', nullable='12+', tagged='12+', tag=0, default='null'),
    F('ReplicaId', 'int32', '0-14', default='-1'),
    F('ReplicaState', 'ReplicaState', '15+', tagged='15+', tag=1, fields=(
        F('ReplicaId', 'int32', '15+', default='-1'),
        F('ReplicaEpoch', 'int64', '15+', default='-1'),
    )),
    F('MaxWaitMs', 'int32', '0+'),
    F('MinBytes', 'int32', '0+'),
    F('MaxBytes', 'int32', '3+', default='0x7fffffff'),
    F('IsolationLevel', 'int8', '4+', default='0'),
    F('SessionId', 'int32', '7+', default='0'),
    F('SessionEpoch', 'int32', '7+', default='-1'),
    F('Topics', '[]FetchTopic', '0+', fields=(
        F('Topic', 'string', '0-12'),
        F('TopicId', 'uuid', '13+'),
        F('Partitions', '[]FetchPartition', '0+', fields=(
            F('Partition', 'int32', '0+'),
            F('CurrentLeaderEpoch', 'int32', '9+', default='-1'),
            F('FetchOffset', 'int64', '0+'),
            F('LastFetchedEpoch', 'int32', '12+', default='-1'),
            F('LogStartOffset', 'int64', '5+', default='-1'),
            F('PartitionMaxBytes', 'int32', '0+'),
            F('ReplicaDirectoryId', 'uuid', '17+', tagged='17+', tag=0),
            F('HighWatermark', 'int64', '18+', tagged='18+', tag=1, default='9223372036854775807'),
        )),
    )),
    F('ForgottenTopicsData', '[]ForgottenTopic', '7+', fields=(
        F('Topic', 'string', '7-12'),
        F('TopicId', 'uuid', '13+'),
        F('Partitions', '[]int32', '7+'),
    )),
    F('RackId', 'string', '11+', default=''),
))

FetchResponse = Message('FetchResponse', valid='4-18', flexible='12+', api_key=1, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('ErrorCode', 'int16', '7+'),
    F('SessionId', 'int32', '7+', default='0'),
    F('Responses', '[]FetchableTopicResponse', '0+', fields=(
        F('Topic', 'string', '0-12'),
        F('TopicId', 'uuid', '13+'),
        F('Partitions', '[]PartitionData', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
            F('HighWatermark', 'int64', '0+'),
            F('LastStableOffset', 'int64', '4+', default='-1'),
            F('LogStartOffset', 'int64', '5+', default='-1'),
            F('DivergingEpoch', 'EpochEndOffset', '12+', tagged='12+', tag=0, fields=(
                F('Epoch', 'int32', '12+', default='-1'),
                F('EndOffset', 'int64', '12+', default='-1'),
            )),
            F('CurrentLeader', 'LeaderIdAndEpoch', '12+', tagged='12+', tag=1, fields=(
                F('LeaderId', 'int32', '12+', default='-1'),
                F('LeaderEpoch', 'int32', '12+', default='-1'),
            )),
            F('SnapshotId', 'SnapshotId', '12+', tagged='12+', tag=2, fields=(
                F('EndOffset', 'int64', '0+', default='-1'),
                F('Epoch', 'int32', '0+', default='-1'),
            )),
            F('AbortedTransactions', '[]AbortedTransaction', '4+', nullable='4+', fields=(
                F('ProducerId', 'int64', '4+'),
                F('FirstOffset', 'int64', '4+'),
            )),
            F('PreferredReadReplica', 'int32', '11+', default='-1'),
            F('Records', 'records', '0+', nullable='0+'),
        )),
    )),
    F('NodeEndpoints', '[]NodeEndpoint', '16+', tagged='16+', tag=0, fields=(
        F('NodeId', 'int32', '16+'),
        F('Host', 'string', '16+'),
        F('Port', 'int32', '16+'),
        F('Rack', 'string', '16+', nullable='16+', default='null'),
    )),
))

FindCoordinatorRequest = Message('FindCoordinatorRequest', valid='0-6', flexible='3+', api_key=10, fields=(
    F('Key', 'string', '0-3'),
    F('KeyType', 'int8', '1+', default='0'),
    F('CoordinatorKeys', '[]string', '4+'),
))

FindCoordinatorResponse = Message('FindCoordinatorResponse', valid='0-6', flexible='3+', api_key=10, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('ErrorCode', 'int16', '0-3'),
    F('ErrorMessage', 'string', '1-3', nullable='1-3'),
    F('NodeId', 'int32', '0-3'),
    F('Host', 'string', '0-3'),
    F('Port', 'int32', '0-3'),
    F('Coordinators', '[]Coordinator', '4+', fields=(
        F('Key', 'string', '4+'),
        F('NodeId', 'int32', '4+'),
        F('Host', 'string', '4+'),
        F('Port', 'int32', '4+'),
        F('ErrorCode', 'int16', '4+'),
        F('ErrorMessage', 'string', '4+', nullable='4+'),
    )),
))

OffsetCommitRequest = Message('OffsetCommitRequest', valid='2-10', flexible='8+', api_key=8, fields=(
    F('GroupId', 'string', '0+'),
    F('GenerationIdOrMemberEpoch', 'int32', '1+', default='-1'),
    F('MemberId', 'string', '1+'),
    F('GroupInstanceId', 'string', '7+', nullable='7+', default='null'),
    F('RetentionTimeMs', 'int64', '2-4', default='-1'),
    F('Topics', '[]OffsetCommitRequestTopic', '0+', fields=(
        F('Name', 'string', '0-9'),
        F('TopicId', 'uuid', '10+'),
        F('Partitions', '[]OffsetCommitRequestPartition', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('CommittedOffset', 'int64', '0+'),
            F('CommittedLeaderEpoch', 'int32', '6+', default='-1'),
            F('CommitTimestamp', 'int64', '1', default='-1'),
            F('CommittedMetadata', 'string', '0+', nullable='0+'),
        )),
    )),
))

OffsetCommitResponse = Message('OffsetCommitResponse', valid='2-10', flexible='8+', api_key=8, fields=(
    F('ThrottleTimeMs', 'int32', '3+'),
    F('Topics', '[]OffsetCommitResponseTopic', '0+', fields=(
        F('Name', 'string', '0-9'),
        F('TopicId', 'uuid', '10+'),
        F('Partitions', '[]OffsetCommitResponsePartition', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
        )),
    )),
))

OffsetFetchRequest = Message('OffsetFetchRequest', valid='1-10', flexible='6+', api_key=9, fields=(
    F('GroupId', 'string', '0-7'),
    F('Topics', '[]OffsetFetchRequestTopic', '0-7', nullable='2-7', fields=(
        F('Name', 'string', '0-7'),
        F('PartitionIndexes', '[]int32', '0-7'),
    )),
    F('Groups', '[]OffsetFetchRequestGroup', '8+', fields=(
        F('GroupId', 'string', '8+'),
        F('MemberId', 'string', '9+', nullable='9+', default='null'),
        F('MemberEpoch', 'int32', '9+', default='-1'),
        F('Topics', '[]OffsetFetchRequestTopics', '8+', nullable='8+', fields=(
            F('Name', 'string', '8-9'),
            F('TopicId', 'uuid', '10+'),
            F('PartitionIndexes', '[]int32', '8+'),
        )),
    )),
    F('RequireStable', 'bool', '7+', default='false'),
))

OffsetFetchResponse = Message('OffsetFetchResponse', valid='1-10', flexible='6+', api_key=9, fields=(
    F('ThrottleTimeMs', 'int32', '3+'),
    F('Topics', '[]OffsetFetchResponseTopic', '0-7', fields=(
        F('Name', 'string', '0-7'),
        F('Partitions', '[]OffsetFetchResponsePartition', '0-7', fields=(
            F('PartitionIndex', 'int32', '0-7'),
            F('CommittedOffset', 'int64', '0-7'),
            F('CommittedLeaderEpoch', 'int32', '5-7', default='-1'),
            F('Metadata', 'string', '0-7', nullable='0-7'),
            F('ErrorCode', 'int16', '0-7'),
        )),
    )),
    F('ErrorCode', 'int16', '2-7', default='0'),
    F('Groups', '[]OffsetFetchResponseGroup', '8+', fields=(
        F('GroupId', 'string', '8+'),
        F('Topics', '[]OffsetFetchResponseTopics', '8+', fields=(
            F('Name', 'string', '8-9'),
            F('TopicId', 'uuid', '10+'),
            F('Partitions', '[]OffsetFetchResponsePartitions', '8+', fields=(
                F('PartitionIndex', 'int32', '8+'),
                F('CommittedOffset', 'int64', '8+'),
                F('CommittedLeaderEpoch', 'int32', '8+', default='-1'),
                F('Metadata', 'string', '8+', nullable='8+'),
                F('ErrorCode', 'int16', '8+'),
            )),
        )),
        F('ErrorCode', 'int16', '8+', default='0'),
    )),
))

JoinGroupRequest = Message('JoinGroupRequest', valid='0-9', flexible='6+', api_key=11, fields=(
    F('GroupId', 'string', '0+'),
    F('SessionTimeoutMs', 'int32', '0+'),
    F('RebalanceTimeoutMs', 'int32', '1+', default='-1'),
    F('MemberId', 'string', '0+'),
    F('GroupInstanceId', 'string', '5+', nullable='5+', default='null'),
    F('ProtocolType', 'string', '0+'),
    F('Protocols', '[]JoinGroupRequestProtocol', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Metadata', 'bytes', '0+'),
    )),
    F('Reason', 'string', '8+', nullable='8+', default='null'),
))

JoinGroupResponse = Message('JoinGroupResponse', valid='0-9', flexible='6+', api_key=11, fields=(
    F('ThrottleTimeMs', 'int32', '2+'),
    F('ErrorCode', 'int16', '0+'),
    F('GenerationId', 'int32', '0+', default='-1'),
    F('ProtocolType', 'string', '7+', nullable='7+', default='null'),
    F('ProtocolName', 'string', '0+', nullable='7+'),
    F('Leader', 'string', '0+'),
    F('SkipAssignment', 'bool', '9+', default='false'),
    F('MemberId', 'string', '0+'),
    F('Members', '[]JoinGroupResponseMember', '0+', fields=(
        F('MemberId', 'string', '0+'),
        F('GroupInstanceId', 'string', '5+', nullable='5+', default='null'),
        F('Metadata', 'bytes', '0+'),
    )),
))

SyncGroupRequest = Message('SyncGroupRequest', valid='0-5', flexible='4+', api_key=14, fields=(
    F('GroupId', 'string', '0+'),
    F('GenerationId', 'int32', '0+'),
    F('MemberId', 'string', '0+'),
    F('GroupInstanceId', 'string', '3+', nullable='3+', default='null'),
    F('ProtocolType', 'string', '5+', nullable='5+', default='null'),
    F('ProtocolName', 'string', '5+', nullable='5+', default='null'),
    F('Assignments', '[]SyncGroupRequestAssignment', '0+', fields=(
        F('MemberId', 'string', '0+'),
        F('Assignment', 'bytes', '0+'),
    )),
))

SyncGroupResponse = Message('SyncGroupResponse', valid='0-5', flexible='4+', api_key=14, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('ErrorCode', 'int16', '0+'),
    F('ProtocolType', 'string', '5+', nullable='5+', default='null'),
    F('ProtocolName', 'string', '5+', nullable='5+', default='null'),
    F('Assignment', 'bytes', '0+'),
))

HeartbeatRequest = Message('HeartbeatRequest', valid='0-4', flexible='4+', api_key=12, fields=(
    F('GroupId', 'string', '0+'),
    F('GenerationId', 'int32', '0+'),
    F('MemberId', 'string', '0+'),
    F('GroupInstanceId', 'string', '3+', nullable='3+', default='null'),
))

HeartbeatResponse = Message('HeartbeatResponse', valid='0-4', flexible='4+', api_key=12, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('ErrorCode', 'int16', '0+'),
))

LeaveGroupRequest = Message('LeaveGroupRequest', valid='0-5', flexible='4+', api_key=13, fields=(
    F('GroupId', 'string', '0+'),
    F('MemberId', 'string', '0-2'),
    F('Members', '[]MemberIdentity', '3+', fields=(
        F('MemberId', 'string', '3+'),
        F('GroupInstanceId', 'string', '3+', nullable='3+', default='null'),
        F('Reason', 'string', '5+', nullable='5+', default='null'),
    )),
))

LeaveGroupResponse = Message('LeaveGroupResponse', valid='0-5', flexible='4+', api_key=13, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('ErrorCode', 'int16', '0+'),
    F('Members', '[]MemberResponse', '3+', fields=(
        F('MemberId', 'string', '3+'),
        F('GroupInstanceId', 'string', '3+', nullable='3+'),
        F('ErrorCode', 'int16', '3+'),
    )),
))

ProduceRequest = Message('ProduceRequest', valid='3-13', flexible='9+', api_key=0, fields=(
    F('TransactionalId', 'string', '3+', nullable='3+', default='null'),
    F('Acks', 'int16', '0+'),
    F('TimeoutMs', 'int32', '0+'),
    F('TopicData', '[]TopicProduceData', '0+', fields=(
        F('Name', 'string', '0-12'),
        F('TopicId', 'uuid', '13+'),
        F('PartitionData', '[]PartitionProduceData', '0+', fields=(
            F('Index', 'int32', '0+'),
            F('Records', 'records', '0+', nullable='0+'),
        )),
    )),
))

ProduceResponse = Message('ProduceResponse', valid='3-13', flexible='9+', api_key=0, fields=(
    F('Responses', '[]TopicProduceResponse', '0+', fields=(
        F('Name', 'string', '0-12'),
        F('TopicId', 'uuid', '13+'),
        F('PartitionResponses', '[]PartitionProduceResponse', '0+', fields=(
            F('Index', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
            F('BaseOffset', 'int64', '0+'),
            F('LogAppendTimeMs', 'int64', '2+', default='-1'),
            F('LogStartOffset', 'int64', '5+', default='-1'),
            F('RecordErrors', '[]BatchIndexAndErrorMessage', '8+', fields=(
                F('BatchIndex', 'int32', '8+'),
                F('BatchIndexErrorMessage', 'string', '8+', nullable='8+', default='null'),
            )),
            F('ErrorMessage', 'string', '8+', nullable='8+', default='null'),
            F('CurrentLeader', 'LeaderIdAndEpoch', '10+', tagged='10+', tag=0, fields=(
                F('LeaderId', 'int32', '10+', default='-1'),
                F('LeaderEpoch', 'int32', '10+', default='-1'),
            )),
        )),
    )),
    F('ThrottleTimeMs', 'int32', '1+', default='0'),
    F('NodeEndpoints', '[]NodeEndpoint', '10+', tagged='10+', tag=0, fields=(
        F('NodeId', 'int32', '10+'),
        F('Host', 'string', '10+'),
        F('Port', 'int32', '10+'),
        F('Rack', 'string', '10+', nullable='10+', default='null'),
    )),
))

InitProducerIdRequest = Message('InitProducerIdRequest', valid='0-5', flexible='2+', api_key=22, fields=(
    F('TransactionalId', 'string', '0+', nullable='0+'),
    F('TransactionTimeoutMs', 'int32', '0+'),
    F('ProducerId', 'int64', '3+', default='-1'),
    F('ProducerEpoch', 'int16', '3+', default='-1'),
))

InitProducerIdResponse = Message('InitProducerIdResponse', valid='0-5', flexible='2+', api_key=22, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '0+'),
    F('ProducerId', 'int64', '0+', default=-1),
    F('ProducerEpoch', 'int16', '0+'),
))

AddPartitionsToTxnRequest = Message('AddPartitionsToTxnRequest', valid='0-5', flexible='3+', api_key=24, fields=(
    F('Transactions', '[]AddPartitionsToTxnTransaction', '4+', fields=(
        F('TransactionalId', 'string', '4+'),
        F('ProducerId', 'int64', '4+'),
        F('ProducerEpoch', 'int16', '4+'),
        F('VerifyOnly', 'bool', '4+', default=False),
        F('Topics', '[]AddPartitionsToTxnTopic', '4+'),
    )),
    F('V3AndBelowTransactionalId', 'string', '0-3'),
    F('V3AndBelowProducerId', 'int64', '0-3'),
    F('V3AndBelowProducerEpoch', 'int16', '0-3'),
    F('V3AndBelowTopics', '[]AddPartitionsToTxnTopic', '0-3'),
), structs={
    'AddPartitionsToTxnTopic': (
        F('Name', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
})

AddPartitionsToTxnResponse = Message('AddPartitionsToTxnResponse', valid='0-5', flexible='3+', api_key=24, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '4+'),
    F('ResultsByTransaction', '[]AddPartitionsToTxnResult', '4+', fields=(
        F('TransactionalId', 'string', '4+'),
        F('TopicResults', '[]AddPartitionsToTxnTopicResult', '4+'),
    )),
    F('ResultsByTopicV3AndBelow', '[]AddPartitionsToTxnTopicResult', '0-3'),
), structs={
    'AddPartitionsToTxnTopicResult': (
        F('Name', 'string', '0+'),
        F('ResultsByPartition', '[]AddPartitionsToTxnPartitionResult', '0+'),
    ),
    'AddPartitionsToTxnPartitionResult': (
        F('PartitionIndex', 'int32', '0+'),
        F('PartitionErrorCode', 'int16', '0+'),
    ),
})

EndTxnRequest = Message('EndTxnRequest', valid='0-5', flexible='3+', api_key=26, fields=(
    F('TransactionalId', 'string', '0+'),
    F('ProducerId', 'int64', '0+'),
    F('ProducerEpoch', 'int16', '0+'),
    F('Committed', 'bool', '0+'),
))

EndTxnResponse = Message('EndTxnResponse', valid='0-5', flexible='3+', api_key=26, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '0+'),
    F('ProducerId', 'int64', '5+', default='-1'),
    F('ProducerEpoch', 'int16', '5+', default='-1'),
))

CreateTopicsRequest = Message('CreateTopicsRequest', valid='2-7', flexible='5+', api_key=19, fields=(
    F('Topics', '[]CreatableTopic', '0+', fields=(
        F('Name', 'string', '0+'),
        F('NumPartitions', 'int32', '0+'),
        F('ReplicationFactor', 'int16', '0+'),
        F('Assignments', '[]CreatableReplicaAssignment', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('BrokerIds', '[]int32', '0+'),
        )),
        F('Configs', '[]CreatableTopicConfig', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Value', 'string', '0+', nullable='0+'),
        )),
    )),
    F('timeoutMs', 'int32', '0+', default='60000'),
    F('validateOnly', 'bool', '1+', default='false'),
))

CreateTopicsResponse = Message('CreateTopicsResponse', valid='2-7', flexible='5+', api_key=19, fields=(
    F('ThrottleTimeMs', 'int32', '2+'),
    F('Topics', '[]CreatableTopicResult', '0+', fields=(
        F('Name', 'string', '0+'),
        F('TopicId', 'uuid', '7+'),
        F('ErrorCode', 'int16', '0+'),
        F('ErrorMessage', 'string', '1+', nullable='0+'),
        F('TopicConfigErrorCode', 'int16', '5+', tagged='5+', tag=0),
        F('NumPartitions', 'int32', '5+', default='-1'),
        F('ReplicationFactor', 'int16', '5+', default='-1'),
        F('Configs', '[]CreatableTopicConfigs', '5+', nullable='5+', fields=(
            F('Name', 'string', '5+'),
            F('Value', 'string', '5+', nullable='5+'),
            F('ReadOnly', 'bool', '5+'),
            F('ConfigSource', 'int8', '5+', default='-1'),
            F('IsSensitive', 'bool', '5+'),
        )),
    )),
))

# the admin and forensic APIs (answered from the log) and the rest of the transaction APIs
ListGroupsRequest = Message('ListGroupsRequest', valid='0-5', flexible='3+', api_key=16, fields=(
    F('StatesFilter', '[]string', '4+'),
    F('TypesFilter', '[]string', '5+'),
))

ListGroupsResponse = Message('ListGroupsResponse', valid='0-5', flexible='3+', api_key=16, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('ErrorCode', 'int16', '0+'),
    F('Groups', '[]ListedGroup', '0+', fields=(
        F('GroupId', 'string', '0+'),
        F('ProtocolType', 'string', '0+'),
        F('GroupState', 'string', '4+'),
        F('GroupType', 'string', '5+'),
    )),
))

DescribeGroupsRequest = Message('DescribeGroupsRequest', valid='0-6', flexible='5+', api_key=15, fields=(
    F('Groups', '[]string', '0+'),
    F('IncludeAuthorizedOperations', 'bool', '3+'),
))

DescribeGroupsResponse = Message('DescribeGroupsResponse', valid='0-6', flexible='5+', api_key=15, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('Groups', '[]DescribedGroup', '0+', fields=(
        F('ErrorCode', 'int16', '0+'),
        F('ErrorMessage', 'string', '6+', nullable='6+', default='null'),
        F('GroupId', 'string', '0+'),
        F('GroupState', 'string', '0+'),
        F('ProtocolType', 'string', '0+'),
        F('ProtocolData', 'string', '0+'),
        F('Members', '[]DescribedGroupMember', '0+', fields=(
            F('MemberId', 'string', '0+'),
            F('GroupInstanceId', 'string', '4+', nullable='4+', default='null'),
            F('ClientId', 'string', '0+'),
            F('ClientHost', 'string', '0+'),
            F('MemberMetadata', 'bytes', '0+'),
            F('MemberAssignment', 'bytes', '0+'),
        )),
        F('AuthorizedOperations', 'int32', '3+', default='-2147483648'),
    )),
))

DescribeConfigsRequest = Message('DescribeConfigsRequest', valid='1-4', flexible='4+', api_key=32, fields=(
    F('Resources', '[]DescribeConfigsResource', '0+', fields=(
        F('ResourceType', 'int8', '0+'),
        F('ResourceName', 'string', '0+'),
        F('ConfigurationKeys', '[]string', '0+', nullable='0+'),
    )),
    F('IncludeSynonyms', 'bool', '1+', default='false'),
    F('IncludeDocumentation', 'bool', '3+', default='false'),
))

DescribeConfigsResponse = Message('DescribeConfigsResponse', valid='1-4', flexible='4+', api_key=32, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('Results', '[]DescribeConfigsResult', '0+', fields=(
        F('ErrorCode', 'int16', '0+'),
        F('ErrorMessage', 'string', '0+', nullable='0+'),
        F('ResourceType', 'int8', '0+'),
        F('ResourceName', 'string', '0+'),
        F('Configs', '[]DescribeConfigsResourceResult', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Value', 'string', '0+', nullable='0+'),
            F('ReadOnly', 'bool', '0+'),
            F('ConfigSource', 'int8', '1+', default='-1'),
            F('IsDefault', 'bool', '0'),
            F('IsSensitive', 'bool', '0+'),
            F('Synonyms', '[]DescribeConfigsSynonym', '1+', fields=(
                F('Name', 'string', '1+'),
                F('Value', 'string', '1+', nullable='0+'),
                F('Source', 'int8', '1+'),
            )),
            F('ConfigType', 'int8', '3+', default='0'),
            F('Documentation', 'string', '3+', nullable='0+'),
        )),
    )),
))

DescribeClusterRequest = Message('DescribeClusterRequest', valid='0-2', flexible='0+', api_key=60, fields=(
    F('IncludeClusterAuthorizedOperations', 'bool', '0+'),
    F('EndpointType', 'int8', '1+', default='1'),
    F('IncludeFencedBrokers', 'bool', '2+'),
))

DescribeClusterResponse = Message('DescribeClusterResponse', valid='0-2', flexible='0+', api_key=60, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '0+'),
    F('ErrorMessage', 'string', '0+', nullable='0+', default='null'),
    F('EndpointType', 'int8', '1+', default='1'),
    F('ClusterId', 'string', '0+'),
    F('ControllerId', 'int32', '0+', default='-1'),
    F('Brokers', '[]DescribeClusterBroker', '0+', fields=(
        F('BrokerId', 'int32', '0+'),
        F('Host', 'string', '0+'),
        F('Port', 'int32', '0+'),
        F('Rack', 'string', '0+', nullable='0+', default='null'),
        F('IsFenced', 'bool', '2+'),
    )),
    F('ClusterAuthorizedOperations', 'int32', '0+', default='-2147483648'),
))

DescribeLogDirsRequest = Message('DescribeLogDirsRequest', valid='1-5', flexible='2+', api_key=35, fields=(
    F('Topics', '[]DescribableLogDirTopic', '0+', nullable='0+', fields=(
        F('Topic', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    )),
))

DescribeLogDirsResponse = Message('DescribeLogDirsResponse', valid='1-5', flexible='2+', api_key=35, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '3+'),
    F('Results', '[]DescribeLogDirsResult', '0+', fields=(
        F('ErrorCode', 'int16', '0+'),
        F('LogDir', 'string', '0+'),
        F('Topics', '[]DescribeLogDirsTopic', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Partitions', '[]DescribeLogDirsPartition', '0+', fields=(
                F('PartitionIndex', 'int32', '0+'),
                F('PartitionSize', 'int64', '0+'),
                F('OffsetLag', 'int64', '0+'),
                F('IsFutureKey', 'bool', '0+'),
            )),
        )),
        F('TotalBytes', 'int64', '4+', default='-1'),
        F('UsableBytes', 'int64', '4+', default='-1'),
        F('IsCordoned', 'bool', '5+', default='false'),
    )),
))

OffsetForLeaderEpochRequest = Message('OffsetForLeaderEpochRequest', valid='2-4', flexible='4+', api_key=23, fields=(
    F('ReplicaId', 'int32', '3+', default='-2'),
    F('Topics', '[]OffsetForLeaderTopic', '0+', fields=(
        F('Topic', 'string', '0+'),
        F('Partitions', '[]OffsetForLeaderPartition', '0+', fields=(
            F('Partition', 'int32', '0+'),
            F('CurrentLeaderEpoch', 'int32', '2+', default='-1'),
            F('LeaderEpoch', 'int32', '0+'),
        )),
    )),
))

OffsetForLeaderEpochResponse = Message('OffsetForLeaderEpochResponse', valid='2-4', flexible='4+', api_key=23, fields=(
    F('ThrottleTimeMs', 'int32', '2+'),
    F('Topics', '[]OffsetForLeaderTopicResult', '0+', fields=(
        F('Topic', 'string', '0+'),
        F('Partitions', '[]EpochEndOffset', '0+', fields=(
            F('ErrorCode', 'int16', '0+'),
            F('Partition', 'int32', '0+'),
            F('LeaderEpoch', 'int32', '1+', default='-1'),
            F('EndOffset', 'int64', '0+', default='-1'),
        )),
    )),
))

DescribeProducersRequest = Message('DescribeProducersRequest', valid='0', flexible='0+', api_key=61, fields=(
    F('Topics', '[]TopicRequest', '0+', fields=(
        F('Name', 'string', '0+'),
        F('PartitionIndexes', '[]int32', '0+'),
    )),
))

DescribeProducersResponse = Message('DescribeProducersResponse', valid='0', flexible='0+', api_key=61, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('Topics', '[]TopicResponse', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]PartitionResponse', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
            F('ErrorMessage', 'string', '0+', nullable='0+', default='null'),
            F('ActiveProducers', '[]ProducerState', '0+', fields=(
                F('ProducerId', 'int64', '0+'),
                F('ProducerEpoch', 'int32', '0+'),
                F('LastSequence', 'int32', '0+', default='-1'),
                F('LastTimestamp', 'int64', '0+', default='-1'),
                F('CoordinatorEpoch', 'int32', '0+'),
                F('CurrentTxnStartOffset', 'int64', '0+', default='-1'),
            )),
        )),
    )),
))

ListTransactionsRequest = Message('ListTransactionsRequest', valid='0-2', flexible='0+', api_key=66, fields=(
    F('StateFilters', '[]string', '0+'),
    F('ProducerIdFilters', '[]int64', '0+'),
    F('DurationFilter', 'int64', '1+', default='-1'),
    F('TransactionalIdPattern', 'string', '2+', nullable='2+', default='null'),
))

ListTransactionsResponse = Message('ListTransactionsResponse', valid='0-2', flexible='0+', api_key=66, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '0+'),
    F('UnknownStateFilters', '[]string', '0+'),
    F('TransactionStates', '[]TransactionState', '0+', fields=(
        F('TransactionalId', 'string', '0+'),
        F('ProducerId', 'int64', '0+'),
        F('TransactionState', 'string', '0+'),
    )),
))

DescribeTransactionsRequest = Message('DescribeTransactionsRequest', valid='0', flexible='0+', api_key=65, fields=(
    F('TransactionalIds', '[]string', '0+'),
))

DescribeTransactionsResponse = Message('DescribeTransactionsResponse', valid='0', flexible='0+', api_key=65, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('TransactionStates', '[]TransactionState', '0+', fields=(
        F('ErrorCode', 'int16', '0+'),
        F('TransactionalId', 'string', '0+'),
        F('TransactionState', 'string', '0+'),
        F('TransactionTimeoutMs', 'int32', '0+'),
        F('TransactionStartTimeMs', 'int64', '0+'),
        F('ProducerId', 'int64', '0+'),
        F('ProducerEpoch', 'int16', '0+'),
        F('Topics', '[]TopicData', '0+', fields=(
            F('Topic', 'string', '0+'),
            F('Partitions', '[]int32', '0+'),
        )),
    )),
))

AddOffsetsToTxnRequest = Message('AddOffsetsToTxnRequest', valid='0-4', flexible='3+', api_key=25, fields=(
    F('TransactionalId', 'string', '0+'),
    F('ProducerId', 'int64', '0+'),
    F('ProducerEpoch', 'int16', '0+'),
    F('GroupId', 'string', '0+'),
))

AddOffsetsToTxnResponse = Message('AddOffsetsToTxnResponse', valid='0-4', flexible='3+', api_key=25, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '0+'),
))

TxnOffsetCommitRequest = Message('TxnOffsetCommitRequest', valid='0-5', flexible='3+', api_key=28, fields=(
    F('TransactionalId', 'string', '0+'),
    F('GroupId', 'string', '0+'),
    F('ProducerId', 'int64', '0+'),
    F('ProducerEpoch', 'int16', '0+'),
    F('GenerationId', 'int32', '3+', default='-1'),
    F('MemberId', 'string', '3+', default=''),
    F('GroupInstanceId', 'string', '3+', nullable='3+', default='null'),
    F('Topics', '[]TxnOffsetCommitRequestTopic', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]TxnOffsetCommitRequestPartition', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('CommittedOffset', 'int64', '0+'),
            F('CommittedLeaderEpoch', 'int32', '2+', default='-1'),
            F('CommittedMetadata', 'string', '0+', nullable='0+'),
        )),
    )),
))

TxnOffsetCommitResponse = Message('TxnOffsetCommitResponse', valid='0-5', flexible='3+', api_key=28, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('Topics', '[]TxnOffsetCommitResponseTopic', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]TxnOffsetCommitResponsePartition', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('ErrorCode', 'int16', '0+'),
        )),
    )),
))

DeleteRecordsRequest = Message('DeleteRecordsRequest', valid='0-2', flexible='2+', api_key=21, fields=(
    F('Topics', '[]DeleteRecordsTopic', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]DeleteRecordsPartition', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('Offset', 'int64', '0+'),
        )),
    )),
    F('TimeoutMs', 'int32', '0+'),
))

DeleteRecordsResponse = Message('DeleteRecordsResponse', valid='0-2', flexible='2+', api_key=21, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('Topics', '[]DeleteRecordsTopicResult', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Partitions', '[]DeleteRecordsPartitionResult', '0+', fields=(
            F('PartitionIndex', 'int32', '0+'),
            F('LowWatermark', 'int64', '0+'),
            F('ErrorCode', 'int16', '0+'),
        )),
    )),
))

DeleteTopicsRequest = Message('DeleteTopicsRequest', valid='1-6', flexible='4+', api_key=20, fields=(
    F('Topics', '[]DeleteTopicState', '6+', fields=(
        F('Name', 'string', '6+', nullable='6+', default='null'),
        F('TopicId', 'uuid', '6+'),
    )),
    F('TopicNames', '[]string', '0-5'),
    F('TimeoutMs', 'int32', '0+'),
))

DeleteTopicsResponse = Message('DeleteTopicsResponse', valid='1-6', flexible='4+', api_key=20, fields=(
    F('ThrottleTimeMs', 'int32', '1+'),
    F('Responses', '[]DeletableTopicResult', '0+', fields=(
        F('Name', 'string', '0+', nullable='6+'),
        F('TopicId', 'uuid', '6+'),
        F('ErrorCode', 'int16', '0+'),
        F('ErrorMessage', 'string', '5+', nullable='5+', default='null'),
    )),
))

CreatePartitionsRequest = Message('CreatePartitionsRequest', valid='0-3', flexible='2+', api_key=37, fields=(
    F('Topics', '[]CreatePartitionsTopic', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Count', 'int32', '0+'),
        F('Assignments', '[]CreatePartitionsAssignment', '0+', nullable='0+', fields=(
            F('BrokerIds', '[]int32', '0+'),
        )),
    )),
    F('TimeoutMs', 'int32', '0+'),
    F('ValidateOnly', 'bool', '0+'),
))

CreatePartitionsResponse = Message('CreatePartitionsResponse', valid='0-3', flexible='2+', api_key=37, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('Results', '[]CreatePartitionsTopicResult', '0+', fields=(
        F('Name', 'string', '0+'),
        F('ErrorCode', 'int16', '0+'),
        F('ErrorMessage', 'string', '0+', nullable='0+', default='null'),
    )),
))

# KIP-848's consumer group protocol
ConsumerGroupHeartbeatRequest = Message('ConsumerGroupHeartbeatRequest', valid='0-1', flexible='0+', api_key=68, fields=(
    F('GroupId', 'string', '0+'),
    F('MemberId', 'string', '0+'),
    F('MemberEpoch', 'int32', '0+'),
    F('InstanceId', 'string', '0+', nullable='0+', default='null'),
    F('RackId', 'string', '0+', nullable='0+', default='null'),
    F('RebalanceTimeoutMs', 'int32', '0+', default='-1'),
    F('SubscribedTopicNames', '[]string', '0+', nullable='0+', default='null'),
    F('SubscribedTopicRegex', 'string', '1+', nullable='1+', default='null'),
    F('ServerAssignor', 'string', '0+', nullable='0+', default='null'),
    F('TopicPartitions', '[]TopicPartitions', '0+', nullable='0+', default='null', fields=(
        F('TopicId', 'uuid', '0+'),
        F('Partitions', '[]int32', '0+'),
    )),
))

ConsumerGroupHeartbeatResponse = Message('ConsumerGroupHeartbeatResponse', valid='0-1', flexible='0+', api_key=68, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('ErrorCode', 'int16', '0+'),
    F('ErrorMessage', 'string', '0+', nullable='0+', default='null'),
    F('MemberId', 'string', '0+', nullable='0+', default='null'),
    F('MemberEpoch', 'int32', '0+'),
    F('HeartbeatIntervalMs', 'int32', '0+'),
    F('Assignment', 'Assignment', '0+', nullable='0+', default='null', fields=(
        F('TopicPartitions', '[]TopicPartitions', '0+'),
    )),
), structs={
    'TopicPartitions': (
        F('TopicId', 'uuid', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
})

ConsumerGroupDescribeRequest = Message('ConsumerGroupDescribeRequest', valid='0', flexible='0+', api_key=69, fields=(
    F('GroupIds', '[]string', '0+'),
    F('IncludeAuthorizedOperations', 'bool', '0+'),
))

ConsumerGroupDescribeResponse = Message('ConsumerGroupDescribeResponse', valid='0', flexible='0+', api_key=69, fields=(
    F('ThrottleTimeMs', 'int32', '0+'),
    F('Groups', '[]DescribedGroup', '0+', fields=(
        F('ErrorCode', 'int16', '0+'),
        F('ErrorMessage', 'string', '0+', nullable='0+', default='null'),
        F('GroupId', 'string', '0+'),
        F('GroupState', 'string', '0+'),
        F('GroupEpoch', 'int32', '0+'),
        F('AssignmentEpoch', 'int32', '0+'),
        F('AssignorName', 'string', '0+'),
        F('Members', '[]Member', '0+', fields=(
            F('MemberId', 'string', '0+'),
            F('InstanceId', 'string', '0+', nullable='0+', default='null'),
            F('RackId', 'string', '0+', nullable='0+', default='null'),
            F('MemberEpoch', 'int32', '0+'),
            F('ClientId', 'string', '0+'),
            F('ClientHost', 'string', '0+'),
            F('SubscribedTopicNames', '[]string', '0+'),
            F('SubscribedTopicRegex', 'string', '0+', nullable='0+', default='null'),
            F('Assignment', 'Assignment', '0+'),
            F('TargetAssignment', 'Assignment', '0+'),
        )),
        F('AuthorizedOperations', 'int32', '0+', default='-2147483648'),
    )),
), structs={
    'TopicPartitions': (
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
    'Assignment': (
        F('TopicPartitions', '[]TopicPartitions', '0+'),
    ),
})

REQUESTS = {m.api_key: m for m in (ApiVersionsRequest, MetadataRequest, ListOffsetsRequest, FetchRequest, FindCoordinatorRequest, OffsetCommitRequest, OffsetFetchRequest, JoinGroupRequest, SyncGroupRequest, HeartbeatRequest, LeaveGroupRequest, ProduceRequest, InitProducerIdRequest, AddPartitionsToTxnRequest, EndTxnRequest, CreateTopicsRequest,
    ListGroupsRequest, DescribeGroupsRequest, DescribeConfigsRequest, DescribeClusterRequest, DescribeLogDirsRequest, OffsetForLeaderEpochRequest, DescribeProducersRequest, ListTransactionsRequest, DescribeTransactionsRequest, AddOffsetsToTxnRequest, TxnOffsetCommitRequest, DeleteRecordsRequest, DeleteTopicsRequest, CreatePartitionsRequest,
    ConsumerGroupHeartbeatRequest, ConsumerGroupDescribeRequest)}
RESPONSES = {m.api_key: m for m in (ApiVersionsResponse, MetadataResponse, ListOffsetsResponse, FetchResponse, FindCoordinatorResponse, OffsetCommitResponse, OffsetFetchResponse, JoinGroupResponse, SyncGroupResponse, HeartbeatResponse, LeaveGroupResponse, ProduceResponse, InitProducerIdResponse, AddPartitionsToTxnResponse, EndTxnResponse, CreateTopicsResponse,
    ListGroupsResponse, DescribeGroupsResponse, DescribeConfigsResponse, DescribeClusterResponse, DescribeLogDirsResponse, OffsetForLeaderEpochResponse, DescribeProducersResponse, ListTransactionsResponse, DescribeTransactionsResponse, AddOffsetsToTxnResponse, TxnOffsetCommitResponse, DeleteRecordsResponse, DeleteTopicsResponse, CreatePartitionsResponse,
    ConsumerGroupHeartbeatResponse, ConsumerGroupDescribeResponse)}

#: Api key -> (min, max) as Kafka 4.x's ApiVersions lists them, for the APIs the replay broker
#: implements.  Produce lists 0-2 although only 3+ are accepted: librdkafka before 2.11.1 enables
#: gzip, snappy and lz4 only when it sees Produce v0 listed (KAFKA-18659).  The transaction APIs
#: stop at v5 (InitProducerId v6 is KIP-939's two-phase commit).
ADVERTISED = {
    0: (0, 13),   # Produce
    1: (4, 18),   # Fetch
    2: (1, 11),   # ListOffsets
    3: (0, 13),   # Metadata
    8: (2, 10),   # OffsetCommit
    9: (1, 10),   # OffsetFetch
    10: (0, 6),   # FindCoordinator
    11: (0, 9),   # JoinGroup
    12: (0, 4),   # Heartbeat
    13: (0, 5),   # LeaveGroup
    14: (0, 5),   # SyncGroup
    18: (0, 4),   # ApiVersions
    19: (2, 7),   # CreateTopics
    22: (0, 5),   # InitProducerId
    24: (0, 5),   # AddPartitionsToTxn
    26: (0, 5),   # EndTxn
    15: (0, 6),   # DescribeGroups
    16: (0, 5),   # ListGroups
    23: (2, 4),   # OffsetForLeaderEpoch
    32: (1, 4),   # DescribeConfigs
    35: (1, 5),   # DescribeLogDirs
    60: (0, 2),   # DescribeCluster
    61: (0, 0),   # DescribeProducers
    65: (0, 0),   # DescribeTransactions
    66: (0, 2),   # ListTransactions
    20: (1, 6),   # DeleteTopics
    21: (0, 2),   # DeleteRecords
    25: (0, 4),   # AddOffsetsToTxn
    28: (0, 5),   # TxnOffsetCommit
    37: (0, 3),   # CreatePartitions
    68: (0, 1),   # ConsumerGroupHeartbeat (KIP-848)
    69: (0, 0),   # ConsumerGroupDescribe (KIP-848)
}
#: API name (the message name less Request) -> api key
API_KEYS = {m.name[:-len("Request")]: k for k, m in REQUESTS.items()}
#: Kafka's ApiKeys by their constant names (PRODUCE, FETCH, API_VERSIONS, ...), from the messages' api keys
def _api_key_enum() -> Any:
    """The ApiKey enum (typed Any: its members are made from the schemas at import, where a type
    checker cannot list them)."""
    return IntEnum("ApiKey", {re.sub(r"(?<!^)(?=[A-Z])", "_", name).upper(): k
                              for name, k in sorted(API_KEYS.items(), key=lambda nk: nk[1])})


ApiKey = _api_key_enum()
