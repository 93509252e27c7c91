"""Kafka's internal-topic and KRaft record schemas: field facts (names, types, versions, tags, defaults)
carried over from Apache Kafka's message definitions (clients, metadata, group-coordinator,
transaction-coordinator, share-coordinator, storage and raft resources) as of Apache Kafka trunk of
August 2026 (Kafka 4.x) into :mod:`specs.message_schema`'s declarative form.  Tags are integers, as on
the wire.

Coordinator keys keep Kafka's older numbering of their definitions: a key's version *is* its record
type (the int16 that prefixes every ``__consumer_offsets`` / ``__share_group_state`` key; Kafka now
calls it the key's apiKey and numbers the key's own version 0).  Where an early-access record changed
its layout within version 0 between Kafka 4.0 and 4.1 (share groups), the 4.0 layout is kept beside the
current one (:data:`KAFKA_40_LAYOUTS`) so that 4.0 logs still decode.
"""
from .message_schema import F, Message

# --- __consumer_offsets: classic protocol (record types 0-2) -----------------------------------

OffsetCommitKey = Message('OffsetCommitKey', valid='0-1', flexible='none', fields=(
    F('group', 'string', '0-1'),
    F('topic', 'string', '0-1'),
    F('partition', 'int32', '0-1'),
))

OffsetCommitValue = Message('OffsetCommitValue', valid='0-4', flexible='4+', fields=(
    F('offset', 'int64', '0+'),
    F('leaderEpoch', 'int32', '3+', default=-1),
    F('metadata', 'string', '0+'),
    F('commitTimestamp', 'int64', '0+'),
    F('expireTimestamp', 'int64', '1', default=-1),
    F('topicId', 'uuid', '4+', tagged='4+', tag=0),
))

GroupMetadataKey = Message('GroupMetadataKey', valid='2', flexible='none', fields=(
    F('group', 'string', '2'),
))

GroupMetadataValue = Message('GroupMetadataValue', valid='0-4', flexible='4+', fields=(
    F('protocolType', 'string', '0+'),
    F('generation', 'int32', '0+'),
    F('protocol', 'string', '0+', nullable='0+'),
    F('leader', 'string', '0+', nullable='0+'),
    F('currentStateTimestamp', 'int64', '2+', default=-1),
    F('members', '[]MemberMetadata', '0+'),
), structs={
    'MemberMetadata': (
        F('memberId', 'string', '0+'),
        F('groupInstanceId', 'string', '3+', nullable='3+', default='null'),
        F('clientId', 'string', '0+'),
        F('clientHost', 'string', '0+'),
        F('rebalanceTimeout', 'int32', '1+', default=-1),
        F('sessionTimeout', 'int32', '0+'),
        F('subscription', 'bytes', '0+'),
        F('assignment', 'bytes', '0+'),
    ),
})

# --- __consumer_offsets: KIP-848 consumer, share and streams group records (types 3+) ----------

ConsumerGroupCurrentMemberAssignmentKey = Message('ConsumerGroupCurrentMemberAssignmentKey', valid='8', flexible='none', fields=(
    F('GroupId', 'string', '8'),
    F('MemberId', 'string', '8'),
))

ConsumerGroupCurrentMemberAssignmentValue = Message('ConsumerGroupCurrentMemberAssignmentValue', valid='0', flexible='0+', fields=(
    F('MemberEpoch', 'int32', '0+'),
    F('PreviousMemberEpoch', 'int32', '0+'),
    F('State', 'int8', '0+'),
    F('AssignedPartitions', '[]TopicPartitions', '0+'),
    F('PartitionsPendingRevocation', '[]TopicPartitions', '0+'),
), structs={
    'TopicPartitions': (
        F('TopicId', 'uuid', '0+'),
        F('Partitions', '[]int32', '0+'),
        F('AssignmentEpochs', '[]int32', '0+', nullable='0+', tagged='0+', tag=0),
    ),
})

ConsumerGroupMemberMetadataKey = Message('ConsumerGroupMemberMetadataKey', valid='5', flexible='none', fields=(
    F('GroupId', 'string', '5'),
    F('MemberId', 'string', '5'),
))

ConsumerGroupMemberMetadataValue = Message('ConsumerGroupMemberMetadataValue', valid='0', flexible='0+', fields=(
    F('InstanceId', 'string', '0+', nullable='0+'),
    F('RackId', 'string', '0+', nullable='0+'),
    F('ClientId', 'string', '0+'),
    F('ClientHost', 'string', '0+'),
    F('SubscribedTopicNames', '[]string', '0+'),
    F('SubscribedTopicRegex', 'string', '0+', nullable='0+'),
    F('RebalanceTimeoutMs', 'int32', '0+', default=-1),
    F('ServerAssignor', 'string', '0+', nullable='0+'),
    F('ClassicMemberMetadata', 'ClassicMemberMetadata', '0+', nullable='0+', tagged='0+', tag=0, default=None, fields=(
        F('SessionTimeoutMs', 'int32', '0+'),
        F('SupportedProtocols', '[]ClassicProtocol', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Metadata', 'bytes', '0+'),
        )),
    )),
))

ConsumerGroupMetadataKey = Message('ConsumerGroupMetadataKey', valid='3', flexible='none', fields=(
    F('GroupId', 'string', '3'),
))

ConsumerGroupMetadataValue = Message('ConsumerGroupMetadataValue', valid='0', flexible='0+', fields=(
    F('Epoch', 'int32', '0+'),
    F('MetadataHash', 'int64', '0+', tagged='0+', tag=0, default='0'),
))

ConsumerGroupPartitionMetadataKey = Message('ConsumerGroupPartitionMetadataKey', valid='4', flexible='none', fields=(
    F('GroupId', 'string', '4'),
))

ConsumerGroupPartitionMetadataValue = Message('ConsumerGroupPartitionMetadataValue', valid='0', flexible='0+', fields=(
    F('Topics', '[]TopicMetadata', '0+', fields=(
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
        F('NumPartitions', 'int32', '0+'),
        F('PartitionMetadata', '[]PartitionMetadata', '0+', fields=(
            F('Partition', 'int32', '0+'),
            F('Racks', '[]string', '0+'),
        )),
    )),
))

ConsumerGroupTargetAssignmentMemberKey = Message('ConsumerGroupTargetAssignmentMemberKey', valid='7', flexible='none', fields=(
    F('GroupId', 'string', '7'),
    F('MemberId', 'string', '7'),
))

ConsumerGroupTargetAssignmentMemberValue = Message('ConsumerGroupTargetAssignmentMemberValue', valid='0', flexible='0+', fields=(
    F('TopicPartitions', '[]TopicPartition', '0+', fields=(
        F('TopicId', 'uuid', '0+'),
        F('Partitions', '[]int32', '0+'),
    )),
))

ConsumerGroupTargetAssignmentMetadataKey = Message('ConsumerGroupTargetAssignmentMetadataKey', valid='6', flexible='none', fields=(
    F('GroupId', 'string', '6'),
))

ConsumerGroupTargetAssignmentMetadataValue = Message('ConsumerGroupTargetAssignmentMetadataValue', valid='0', flexible='0+', fields=(
    F('AssignmentEpoch', 'int32', '0+'),
    F('AssignmentTimestamp', 'int64', '0+', tagged='0+', tag=0, default='0'),
))

ShareGroupCurrentMemberAssignmentKey = Message('ShareGroupCurrentMemberAssignmentKey', valid='14', flexible='none', fields=(
    F('GroupId', 'string', '14'),
    F('MemberId', 'string', '14'),
))

ShareGroupCurrentMemberAssignmentValue = Message('ShareGroupCurrentMemberAssignmentValue', valid='0', flexible='0+', fields=(
    F('MemberEpoch', 'int32', '0+'),
    F('PreviousMemberEpoch', 'int32', '0+'),
    F('State', 'int8', '0+'),
    F('AssignedPartitions', '[]TopicPartitions', '0+'),
), structs={
    'TopicPartitions': (
        F('TopicId', 'uuid', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
})

ShareGroupMemberMetadataKey = Message('ShareGroupMemberMetadataKey', valid='10', flexible='none', fields=(
    F('GroupId', 'string', '10'),
    F('MemberId', 'string', '10'),
))

ShareGroupMemberMetadataValue = Message('ShareGroupMemberMetadataValue', valid='0', flexible='0+', fields=(
    F('RackId', 'string', '0+', nullable='0+'),
    F('ClientId', 'string', '0+'),
    F('ClientHost', 'string', '0+'),
    F('SubscribedTopicNames', '[]string', '0+'),
))

ShareGroupMetadataKey = Message('ShareGroupMetadataKey', valid='11', flexible='none', fields=(
    F('GroupId', 'string', '11'),
))

ShareGroupMetadataValue = Message('ShareGroupMetadataValue', valid='0', flexible='0+', fields=(
    F('Epoch', 'int32', '0+'),
    F('MetadataHash', 'int64', '0+'),
))

# record type 9 exists only in Kafka 4.0 (removed in 4.1); kept so that 4.0 logs decode
ShareGroupPartitionMetadataKey = Message('ShareGroupPartitionMetadataKey', valid='9', flexible='none', fields=(
    F('GroupId', 'string', '9'),
))

ShareGroupPartitionMetadataValue = Message('ShareGroupPartitionMetadataValue', valid='0', flexible='0+', fields=(
    F('Topics', '[]TopicMetadata', '0+', fields=(
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
        F('NumPartitions', 'int32', '0+'),
        F('PartitionMetadata', '[]PartitionMetadata', '0+', fields=(
            F('Partition', 'int32', '0+'),
            F('Racks', '[]string', '0+'),
        )),
    )),
))

ShareGroupStatePartitionMetadataKey = Message('ShareGroupStatePartitionMetadataKey', valid='15', flexible='none', fields=(
    F('GroupId', 'string', '15'),
))

ShareGroupStatePartitionMetadataValue = Message('ShareGroupStatePartitionMetadataValue', valid='0', flexible='0+', fields=(
    F('InitializingTopics', '[]TopicPartitionsInfo', '0+'),
    F('InitializedTopics', '[]TopicPartitionsInfo', '0+'),
    F('DeletingTopics', '[]TopicInfo', '0+'),
), structs={
    'TopicPartitionsInfo': (
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
    'TopicInfo': (
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
    ),
})

ShareGroupTargetAssignmentMemberKey = Message('ShareGroupTargetAssignmentMemberKey', valid='13', flexible='none', fields=(
    F('GroupId', 'string', '13'),
    F('MemberId', 'string', '13'),
))

ShareGroupTargetAssignmentMemberValue = Message('ShareGroupTargetAssignmentMemberValue', valid='0', flexible='0+', fields=(
    F('TopicPartitions', '[]TopicPartition', '0+', fields=(
        F('TopicId', 'uuid', '0+'),
        F('Partitions', '[]int32', '0+'),
    )),
))

ShareGroupTargetAssignmentMetadataKey = Message('ShareGroupTargetAssignmentMetadataKey', valid='12', flexible='none', fields=(
    F('GroupId', 'string', '12'),
))

ShareGroupTargetAssignmentMetadataValue = Message('ShareGroupTargetAssignmentMetadataValue', valid='0', flexible='0+', fields=(
    F('AssignmentEpoch', 'int32', '0+'),
    F('AssignmentTimestamp', 'int64', '0+', tagged='0+', tag=0, default='0'),
))

ConsumerGroupRegularExpressionKey = Message('ConsumerGroupRegularExpressionKey', valid='16', flexible='none', fields=(
    F('GroupId', 'string', '16'),
    F('RegularExpression', 'string', '16'),
))

ConsumerGroupRegularExpressionValue = Message('ConsumerGroupRegularExpressionValue', valid='0', flexible='0+', fields=(
    F('Topics', '[]string', '0+'),
    F('Version', 'int64', '0+'),
    F('Timestamp', 'int64', '0+'),
))

StreamsGroupMetadataKey = Message('StreamsGroupMetadataKey', valid='17', flexible='none', fields=(
    F('GroupId', 'string', '17'),
))

StreamsGroupMetadataValue = Message('StreamsGroupMetadataValue', valid='0', flexible='0+', fields=(
    F('Epoch', 'int32', '0+'),
    F('MetadataHash', 'int64', '0+'),
    F('ValidatedTopologyEpoch', 'int32', '0+', tagged='0+', tag=0, default='-1'),
    F('LastAssignmentConfigs', '[]LastAssignmentConfig', '0+', nullable='0+', tagged='0+', tag=1),
    F('StoredDescriptionTopologyEpoch', 'int32', '0+', tagged='0+', tag=2, default='-1'),
    F('FailedDescriptionTopologyEpoch', 'int32', '0+', tagged='0+', tag=3, default='-1'),
), structs={
    'LastAssignmentConfig': (
        F('Key', 'string', '0+'),
        F('Value', 'string', '0+'),
    ),
})

StreamsGroupMemberMetadataKey = Message('StreamsGroupMemberMetadataKey', valid='19', flexible='none', fields=(
    F('GroupId', 'string', '19'),
    F('MemberId', 'string', '19'),
))

StreamsGroupMemberMetadataValue = Message('StreamsGroupMemberMetadataValue', valid='0', flexible='0+', fields=(
    F('InstanceId', 'string', '0+', nullable='0+'),
    F('RackId', 'string', '0+', nullable='0+'),
    F('ClientId', 'string', '0+'),
    F('ClientHost', 'string', '0+'),
    F('RebalanceTimeoutMs', 'int32', '0+', default='-1'),
    F('TopologyEpoch', 'int32', '0+'),
    F('ProcessId', 'string', '0+'),
    F('UserEndpoint', 'Endpoint', '0+', nullable='0+', default='null'),
    F('ClientTags', '[]KeyValue', '0+'),
), structs={
    'Endpoint': (
        F('Host', 'string', '0+'),
        F('Port', 'uint16', '0+'),
    ),
    'KeyValue': (
        F('Key', 'string', '0+'),
        F('Value', 'string', '0+'),
    ),
})

StreamsGroupTargetAssignmentMetadataKey = Message('StreamsGroupTargetAssignmentMetadataKey', valid='20', flexible='none', fields=(
    F('GroupId', 'string', '20'),
))

StreamsGroupTargetAssignmentMetadataValue = Message('StreamsGroupTargetAssignmentMetadataValue', valid='0', flexible='0+', fields=(
    F('AssignmentEpoch', 'int32', '0+'),
    F('AssignmentTimestamp', 'int64', '0+', tagged='0+', tag=0, default='0'),
))

StreamsGroupTargetAssignmentMemberKey = Message('StreamsGroupTargetAssignmentMemberKey', valid='21', flexible='none', fields=(
    F('GroupId', 'string', '21'),
    F('MemberId', 'string', '21'),
))

StreamsGroupTargetAssignmentMemberValue = Message('StreamsGroupTargetAssignmentMemberValue', valid='0', flexible='0+', fields=(
    F('ActiveTasks', '[]TaskIds', '0+'),
    F('StandbyTasks', '[]TaskIds', '0+'),
    F('WarmupTasks', '[]TaskIds', '0+'),
), structs={
    'TaskIds': (
        F('SubtopologyId', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
})

StreamsGroupCurrentMemberAssignmentKey = Message('StreamsGroupCurrentMemberAssignmentKey', valid='22', flexible='none', fields=(
    F('GroupId', 'string', '22'),
    F('MemberId', 'string', '22'),
))

StreamsGroupCurrentMemberAssignmentValue = Message('StreamsGroupCurrentMemberAssignmentValue', valid='0', flexible='0+', fields=(
    F('MemberEpoch', 'int32', '0+'),
    F('PreviousMemberEpoch', 'int32', '0+'),
    F('State', 'int8', '0+'),
    F('ActiveTasks', '[]TaskIds', '0+'),
    F('StandbyTasks', '[]TaskIds', '0+'),
    F('WarmupTasks', '[]TaskIds', '0+'),
    F('ActiveTasksPendingRevocation', '[]TaskIds', '0+'),
    F('StandbyTasksPendingRevocation', '[]TaskIds', '0+'),
    F('WarmupTasksPendingRevocation', '[]TaskIds', '0+'),
), structs={
    'TaskIds': (
        F('SubtopologyId', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
        F('AssignmentEpochs', '[]int32', '0+', nullable='0+', tagged='0+', tag=0),
    ),
})

StreamsGroupTopologyKey = Message('StreamsGroupTopologyKey', valid='23', flexible='none', fields=(
    F('GroupId', 'string', '23'),
))

StreamsGroupTopologyValue = Message('StreamsGroupTopologyValue', valid='0', flexible='0+', fields=(
    F('Epoch', 'int32', '0+'),
    F('Subtopologies', '[]Subtopology', '0+', fields=(
        F('SubtopologyId', 'string', '0+'),
        F('SourceTopics', '[]string', '0+'),
        F('SourceTopicRegex', '[]string', '0+'),
        F('StateChangelogTopics', '[]TopicInfo', '0+'),
        F('RepartitionSinkTopics', '[]string', '0+'),
        F('RepartitionSourceTopics', '[]TopicInfo', '0+'),
        F('CopartitionGroups', '[]CopartitionGroup', '0+', fields=(
            F('SourceTopics', '[]int16', '0+'),
            F('SourceTopicRegex', '[]int16', '0+'),
            F('RepartitionSourceTopics', '[]int16', '0+'),
        )),
    )),
), structs={
    'TopicConfig': (
        F('key', 'string', '0+'),
        F('value', 'string', '0+'),
    ),
    'TopicInfo': (
        F('Name', 'string', '0+'),
        F('Partitions', 'int32', '0+'),
        F('ReplicationFactor', 'int16', '0+'),
        F('TopicConfigs', '[]TopicConfig', '0+'),
    ),
})

# --- __transaction_state -----------------------------------------------------------------------

TransactionLogKey = Message('TransactionLogKey', valid='0', flexible='none', fields=(
    F('TransactionalId', 'string', '0'),
))

TransactionLogValue = Message('TransactionLogValue', valid='0-1', flexible='1+', fields=(
    F('ProducerId', 'int64', '0+'),
    F('PreviousProducerId', 'int64', '1+', tagged='1+', tag=0, default='-1'),
    F('NextProducerId', 'int64', '1+', tagged='1+', tag=1, default='-1'),
    F('ProducerEpoch', 'int16', '0+'),
    F('NextProducerEpoch', 'int16', '1+', tagged='1+', tag=3, default='-1'),
    F('TransactionTimeoutMs', 'int32', '0+'),
    F('TransactionStatus', 'int8', '0+'),
    F('TransactionPartitions', '[]PartitionsSchema', '0+', nullable='0+', fields=(
        F('Topic', 'string', '0+'),
        F('PartitionIds', '[]int32', '0+'),
    )),
    F('TransactionLastUpdateTimestampMs', 'int64', '0+'),
    F('TransactionStartTimestampMs', 'int64', '0+'),
    F('ClientTransactionVersion', 'int16', '1+', tagged='1+', tag=2, default='0'),
))

#: TransactionLogValue.TransactionStatus -> the state name Kafka's admin APIs report
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

# --- __cluster_metadata control records --------------------------------------------------------

KRaftVersionRecord = Message('KRaftVersionRecord', valid='0', flexible='0+', fields=(
    F('Version', 'int16', '0+'),
    F('KRaftVersion', 'int16', '0+'),
))

LeaderChangeMessage = Message('LeaderChangeMessage', valid='0-1', flexible='0+', fields=(
    F('Version', 'int16', '0+'),
    F('LeaderId', 'int32', '0+'),
    F('Voters', '[]Voter', '0+'),
    F('GrantingVoters', '[]Voter', '0+'),
), structs={
    'Voter': (
        F('VoterId', 'int32', '0+'),
        F('VoterDirectoryId', 'uuid', '1+'),
    ),
})

SnapshotFooterRecord = Message('SnapshotFooterRecord', valid='0', flexible='0+', fields=(
    F('Version', 'int16', '0+'),
))

SnapshotHeaderRecord = Message('SnapshotHeaderRecord', valid='0', flexible='0+', fields=(
    F('Version', 'int16', '0+'),
    F('LastContainedLogTimestamp', 'int64', '0+'),
))

VotersRecord = Message('VotersRecord', valid='0', flexible='0+', fields=(
    F('Version', 'int16', '0+'),
    F('Voters', '[]Voter', '0+', fields=(
        F('VoterId', 'int32', '0+'),
        F('VoterDirectoryId', 'uuid', '0+'),
        F('Endpoints', '[]Endpoint', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Host', 'string', '0+'),
            F('Port', 'uint16', '0+'),
        )),
        F('KRaftVersionFeature', 'KRaftVersionFeature', '0+', fields=(
            F('MinSupportedVersion', 'int16', '0+'),
            F('MaxSupportedVersion', 'int16', '0+'),
        )),
    )),
))

# --- __cluster_metadata records (by apiKey) ----------------------------------------------------

AbortTransactionRecord = Message('AbortTransactionRecord', valid='0', flexible='0+', api_key=25, fields=(
    F('Reason', 'string', '0+', nullable='0+', tagged='0+', tag=0, default='null'),
))

AccessControlEntryRecord = Message('AccessControlEntryRecord', valid='0', flexible='0+', api_key=18, fields=(
    F('Id', 'uuid', '0+'),
    F('ResourceType', 'int8', '0+'),
    F('ResourceName', 'string', '0+'),
    F('PatternType', 'int8', '0+'),
    F('Principal', 'string', '0+'),
    F('Host', 'string', '0+'),
    F('Operation', 'int8', '0+'),
    F('PermissionType', 'int8', '0+'),
))

BeginTransactionRecord = Message('BeginTransactionRecord', valid='0', flexible='0+', api_key=23, fields=(
    F('Name', 'string', '0+', nullable='0+', tagged='0+', tag=0, default='null'),
))

BrokerRegistrationChangeRecord = Message('BrokerRegistrationChangeRecord', valid='0-3', flexible='0+', api_key=17, fields=(
    F('BrokerId', 'int32', '0+'),
    F('BrokerEpoch', 'int64', '0+'),
    F('Fenced', 'int8', '0+', tagged='0+', tag=0),
    F('InControlledShutdown', 'int8', '1+', tagged='1+', tag=1),
    F('LogDirs', '[]uuid', '2+', tagged='2+', tag=2),
    F('CordonedLogDirs', '[]uuid', '3+', nullable='3+', tagged='3+', tag=3, default='null'),
))

ClientQuotaRecord = Message('ClientQuotaRecord', valid='0', flexible='0+', api_key=14, fields=(
    F('Entity', '[]EntityData', '0+', fields=(
        F('EntityType', 'string', '0+'),
        F('EntityName', 'string', '0+', nullable='0+'),
    )),
    F('Key', 'string', '0+'),
    F('Value', 'float64', '0+'),
    F('Remove', 'bool', '0+'),
))

ConfigRecord = Message('ConfigRecord', valid='0', flexible='0+', api_key=4, fields=(
    F('ResourceType', 'int8', '0+'),
    F('ResourceName', 'string', '0+'),
    F('Name', 'string', '0+'),
    F('Value', 'string', '0+', nullable='0+'),
))

DelegationTokenRecord = Message('DelegationTokenRecord', valid='0', flexible='0+', api_key=10, fields=(
    F('Owner', 'string', '0+'),
    F('Requester', 'string', '0+'),
    F('Renewers', '[]string', '0+'),
    F('IssueTimestamp', 'int64', '0+'),
    F('MaxTimestamp', 'int64', '0+'),
    F('ExpirationTimestamp', 'int64', '0+'),
    F('TokenId', 'string', '0+'),
))

EndTransactionRecord = Message('EndTransactionRecord', valid='0', flexible='0+', api_key=24, fields=(
))

FeatureLevelRecord = Message('FeatureLevelRecord', valid='0', flexible='0+', api_key=12, fields=(
    F('Name', 'string', '0+'),
    F('FeatureLevel', 'int16', '0+'),
))

FenceBrokerRecord = Message('FenceBrokerRecord', valid='0', flexible='0+', api_key=7, fields=(
    F('Id', 'int32', '0+'),
    F('Epoch', 'int64', '0+'),
))

NoOpRecord = Message('NoOpRecord', valid='0', flexible='0+', api_key=20, fields=(
))

PartitionChangeRecord = Message('PartitionChangeRecord', valid='0-2', flexible='0+', api_key=5, fields=(
    F('PartitionId', 'int32', '0+', default='-1'),
    F('TopicId', 'uuid', '0+'),
    F('Isr', '[]int32', '0+', nullable='0+', tagged='0+', tag=0, default='null'),
    F('Leader', 'int32', '0+', tagged='0+', tag=1, default='-2'),
    F('Replicas', '[]int32', '0+', nullable='0+', tagged='0+', tag=2, default='null'),
    F('RemovingReplicas', '[]int32', '0+', nullable='0+', tagged='0+', tag=3, default='null'),
    F('AddingReplicas', '[]int32', '0+', nullable='0+', tagged='0+', tag=4, default='null'),
    F('LeaderRecoveryState', 'int8', '0+', tagged='0+', tag=5, default='-1'),
    F('Directories', '[]uuid', '1+', nullable='1+', tagged='1+', tag=8, default='null'),
    F('EligibleLeaderReplicas', '[]int32', '2+', nullable='2+', tagged='2+', tag=6, default='null'),
    F('LastKnownElr', '[]int32', '2+', nullable='2+', tagged='2+', tag=7, default='null'),
))

PartitionRecord = Message('PartitionRecord', valid='0-2', flexible='0+', api_key=3, fields=(
    F('PartitionId', 'int32', '0+', default='-1'),
    F('TopicId', 'uuid', '0+'),
    F('Replicas', '[]int32', '0+'),
    F('Isr', '[]int32', '0+'),
    F('RemovingReplicas', '[]int32', '0+'),
    F('AddingReplicas', '[]int32', '0+'),
    F('Leader', 'int32', '0+', default='-1'),
    F('LeaderRecoveryState', 'int8', '0+', tagged='0+', tag=0, default='0'),
    F('LeaderEpoch', 'int32', '0+', default='-1'),
    F('PartitionEpoch', 'int32', '0+', default='-1'),
    F('Directories', '[]uuid', '1+'),
    F('EligibleLeaderReplicas', '[]int32', '2+', nullable='2+', tagged='2+', tag=1, default='null'),
    F('LastKnownElr', '[]int32', '2+', nullable='2+', tagged='2+', tag=2, default='null'),
))

ProducerIdsRecord = Message('ProducerIdsRecord', valid='0', flexible='0+', api_key=15, fields=(
    F('BrokerId', 'int32', '0+'),
    F('BrokerEpoch', 'int64', '0+', default='-1'),
    F('NextProducerId', 'int64', '0+'),
))

RegisterBrokerRecord = Message('RegisterBrokerRecord', valid='0-4', flexible='0+', api_key=0, fields=(
    F('BrokerId', 'int32', '0+'),
    F('IsMigratingZkBroker', 'bool', '2+', default='false'),
    F('IncarnationId', 'uuid', '0+'),
    F('BrokerEpoch', 'int64', '0+'),
    F('EndPoints', '[]BrokerEndpoint', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Host', 'string', '0+'),
        F('Port', 'uint16', '0+'),
        F('SecurityProtocol', 'int16', '0+'),
    )),
    F('Features', '[]BrokerFeature', '0+', fields=(
        F('Name', 'string', '0+'),
        F('MinSupportedVersion', 'int16', '0+'),
        F('MaxSupportedVersion', 'int16', '0+'),
    )),
    F('Rack', 'string', '0+', nullable='0+'),
    F('Fenced', 'bool', '0+', default='true'),
    F('InControlledShutdown', 'bool', '1+', default='false'),
    F('LogDirs', '[]uuid', '3+', tagged='3+', tag=0),
    F('CordonedLogDirs', '[]uuid', '4+', nullable='4+', tagged='4+', tag=1, default='null'),
))

RegisterControllerRecord = Message('RegisterControllerRecord', valid='0', flexible='0+', api_key=27, fields=(
    F('ControllerId', 'int32', '0+'),
    F('IncarnationId', 'uuid', '0+'),
    F('ZkMigrationReady', 'bool', '0+'),
    F('EndPoints', '[]ControllerEndpoint', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Host', 'string', '0+'),
        F('Port', 'uint16', '0+'),
        F('SecurityProtocol', 'int16', '0+'),
    )),
    F('Features', '[]ControllerFeature', '0+', fields=(
        F('Name', 'string', '0+'),
        F('MinSupportedVersion', 'int16', '0+'),
        F('MaxSupportedVersion', 'int16', '0+'),
    )),
))

RemoveAccessControlEntryRecord = Message('RemoveAccessControlEntryRecord', valid='0', flexible='0+', api_key=19, fields=(
    F('Id', 'uuid', '0+'),
))

RemoveDelegationTokenRecord = Message('RemoveDelegationTokenRecord', valid='0', flexible='0+', api_key=26, fields=(
    F('TokenId', 'string', '0+'),
))

RemoveTopicRecord = Message('RemoveTopicRecord', valid='0', flexible='0+', api_key=9, fields=(
    F('TopicId', 'uuid', '0+'),
))

RemoveUserScramCredentialRecord = Message('RemoveUserScramCredentialRecord', valid='0', flexible='0+', api_key=22, fields=(
    F('Name', 'string', '0+'),
    F('Mechanism', 'int8', '0+'),
))

TopicRecord = Message('TopicRecord', valid='0', flexible='0+', api_key=2, fields=(
    F('Name', 'string', '0+'),
    F('TopicId', 'uuid', '0+'),
))

UnfenceBrokerRecord = Message('UnfenceBrokerRecord', valid='0', flexible='0+', api_key=8, fields=(
    F('Id', 'int32', '0+'),
    F('Epoch', 'int64', '0+'),
))

UnregisterBrokerRecord = Message('UnregisterBrokerRecord', valid='0', flexible='0+', api_key=1, fields=(
    F('BrokerId', 'int32', '0+'),
    F('BrokerEpoch', 'int64', '0+'),
))

UserScramCredentialRecord = Message('UserScramCredentialRecord', valid='0', flexible='0+', api_key=11, fields=(
    F('Name', 'string', '0+'),
    F('Mechanism', 'int8', '0+'),
    F('Salt', 'bytes', '0+'),
    F('StoredKey', 'bytes', '0+'),
    F('ServerKey', 'bytes', '0+'),
    F('Iterations', 'int32', '0+'),
))

ZkMigrationStateRecord = Message('ZkMigrationStateRecord', valid='0', flexible='0+', api_key=21, fields=(
    F('ZkMigrationState', 'int8', '0+'),
))

ClearElrRecord = Message('ClearElrRecord', valid='0', flexible='0+', api_key=28, fields=(
    F('TopicName', 'string', '0+'),
))

UnregisterControllerRecord = Message('UnregisterControllerRecord', valid='0', flexible='0+', api_key=29, fields=(
    F('ControllerId', 'int32', '0+'),
))

# --- __share_group_state -----------------------------------------------------------------------

ShareSnapshotKey = Message('ShareSnapshotKey', valid='0', flexible='none', fields=(
    F('GroupId', 'string', '0'),
    F('TopicId', 'uuid', '0'),
    F('Partition', 'int32', '0'),
))

ShareSnapshotValue = Message('ShareSnapshotValue', valid='0', flexible='0+', fields=(
    F('SnapshotEpoch', 'int32', '0+'),
    F('StateEpoch', 'int32', '0+'),
    F('LeaderEpoch', 'int32', '0+'),
    F('StartOffset', 'int64', '0+'),
    F('DeliveryCompleteCount', 'int32', '0+', tagged='0+', tag=0, default='-1'),
    F('CreateTimestamp', 'int64', '0+'),
    F('WriteTimestamp', 'int64', '0+'),
    F('StateBatches', '[]StateBatch', '0+', fields=(
        F('FirstOffset', 'int64', '0+'),
        F('LastOffset', 'int64', '0+'),
        F('DeliveryState', 'int8', '0+'),
        F('DeliveryCount', 'int16', '0+'),
    )),
))

ShareUpdateKey = Message('ShareUpdateKey', valid='1', flexible='none', fields=(
    F('GroupId', 'string', '1'),
    F('TopicId', 'uuid', '1'),
    F('Partition', 'int32', '1'),
))

ShareUpdateValue = Message('ShareUpdateValue', valid='0', flexible='0+', fields=(
    F('SnapshotEpoch', 'int32', '0+'),
    F('LeaderEpoch', 'int32', '0+'),
    F('StartOffset', 'int64', '0+'),
    F('DeliveryCompleteCount', 'int32', '0+', tagged='0+', tag=0, default='-1'),
    F('StateBatches', '[]StateBatch', '0+', fields=(
        F('FirstOffset', 'int64', '0+'),
        F('LastOffset', 'int64', '0+'),
        F('DeliveryState', 'int8', '0+'),
        F('DeliveryCount', 'int16', '0+'),
    )),
))

# --- __remote_log_metadata ---------------------------------------------------------------------

RemoteLogSegmentMetadataRecord = Message('RemoteLogSegmentMetadataRecord', valid='0', flexible='0+', api_key=0, fields=(
    F('RemoteLogSegmentId', 'RemoteLogSegmentIdEntry', '0+', fields=(
        F('TopicIdPartition', 'TopicIdPartitionEntry', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Id', 'uuid', '0+'),
            F('Partition', 'int32', '0+'),
        )),
        F('Id', 'uuid', '0+'),
    )),
    F('StartOffset', 'int64', '0+'),
    F('EndOffset', 'int64', '0+'),
    F('BrokerId', 'int32', '0+'),
    F('MaxTimestampMs', 'int64', '0+'),
    F('EventTimestampMs', 'int64', '0+'),
    F('SegmentLeaderEpochs', '[]SegmentLeaderEpochEntry', '0+', fields=(
        F('LeaderEpoch', 'int32', '0+'),
        F('Offset', 'int64', '0+'),
    )),
    F('SegmentSizeInBytes', 'int32', '0+'),
    F('CustomMetadata', 'bytes', '0+', nullable='0+', default='null'),
    F('RemoteLogSegmentState', 'int8', '0+'),
    F('TxnIndexEmpty', 'bool', '0+', tagged='0+', tag=0),
))

RemoteLogSegmentMetadataUpdateRecord = Message('RemoteLogSegmentMetadataUpdateRecord', valid='0', flexible='0+', api_key=1, fields=(
    F('RemoteLogSegmentId', 'RemoteLogSegmentIdEntry', '0+', fields=(
        F('TopicIdPartition', 'TopicIdPartitionEntry', '0+', fields=(
            F('Name', 'string', '0+'),
            F('Id', 'uuid', '0+'),
            F('Partition', 'int32', '0+'),
        )),
        F('Id', 'uuid', '0+'),
    )),
    F('BrokerId', 'int32', '0+'),
    F('EventTimestampMs', 'int64', '0+'),
    F('CustomMetadata', 'bytes', '0+', nullable='0+', default='null'),
    F('RemoteLogSegmentState', 'int8', '0+'),
))

RemotePartitionDeleteMetadataRecord = Message('RemotePartitionDeleteMetadataRecord', valid='0', flexible='0+', api_key=2, fields=(
    F('TopicIdPartition', 'TopicIdPartitionEntry', '0+', fields=(
        F('Name', 'string', '0+'),
        F('Id', 'uuid', '0+'),
        F('Partition', 'int32', '0+'),
    )),
    F('BrokerId', 'int32', '0+'),
    F('EventTimestampMs', 'int64', '0+'),
    F('RemotePartitionDeleteState', 'int8', '0+'),
))

RemoteLogSegmentMetadataSnapshotRecord = Message('RemoteLogSegmentMetadataSnapshotRecord', valid='0', flexible='0+', api_key=3, fields=(
    F('SegmentId', 'uuid', '0+'),
    F('StartOffset', 'int64', '0+'),
    F('EndOffset', 'int64', '0+'),
    F('BrokerId', 'int32', '0+'),
    F('MaxTimestampMs', 'int64', '0+'),
    F('EventTimestampMs', 'int64', '0+'),
    F('SegmentLeaderEpochs', '[]SegmentLeaderEpochEntry', '0+', fields=(
        F('LeaderEpoch', 'int32', '0+'),
        F('Offset', 'int64', '0+'),
    )),
    F('SegmentSizeInBytes', 'int32', '0+'),
    F('CustomMetadata', 'bytes', '0+', nullable='0+', default='null'),
    F('RemoteLogSegmentState', 'int8', '0+'),
    F('TxnIndexEmpty', 'bool', '0+', tagged='0+', tag=0),
))

# --- Kafka 4.0's layouts of the early-access share group records whose version 0 changed in 4.1 ----

ShareGroupMetadataValue40 = Message('ShareGroupMetadataValue@4.0', valid='0', flexible='0+', fields=(
    F('Epoch', 'int32', '0+'),
))

ShareGroupStatePartitionMetadataValue40 = Message('ShareGroupStatePartitionMetadataValue@4.0', valid='0', flexible='0+', fields=(
    F('InitializedTopics', '[]TopicPartitionsInfo', '0+'),
    F('DeletingTopics', '[]TopicInfo', '0+'),
), structs={
    'TopicPartitionsInfo': (
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    ),
    'TopicInfo': (
        F('TopicId', 'uuid', '0+'),
        F('TopicName', 'string', '0+'),
    ),
})

ShareSnapshotValue40 = Message('ShareSnapshotValue@4.0', valid='0', flexible='0+', fields=(
    F('SnapshotEpoch', 'uint16', '0'),
    F('StateEpoch', 'int32', '0+'),
    F('LeaderEpoch', 'int32', '0+'),
    F('StartOffset', 'int64', '0'),
    F('StateBatches', '[]StateBatch', '0', fields=(
        F('FirstOffset', 'int64', '0'),
        F('LastOffset', 'int64', '0'),
        F('DeliveryState', 'int8', '0'),
        F('DeliveryCount', 'int16', '0'),
    )),
))

ShareUpdateValue40 = Message('ShareUpdateValue@4.0', valid='0', flexible='0+', fields=(
    F('SnapshotEpoch', 'uint16', '0'),
    F('LeaderEpoch', 'int32', '0+'),
    F('StartOffset', 'int64', '0'),
    F('StateBatches', '[]StateBatch', '0', fields=(
        F('FirstOffset', 'int64', '0'),
        F('LastOffset', 'int64', '0'),
        F('DeliveryState', 'int8', '0'),
        F('DeliveryCount', 'int16', '0'),
    )),
))

#: current value schema name -> (the Kafka version whose layout it is, that layout): tried when a value
#: does not parse with the current layout
KAFKA_40_LAYOUTS = {
    'ShareGroupMetadataValue': ('4.0', ShareGroupMetadataValue40),
    'ShareGroupStatePartitionMetadataValue': ('4.0', ShareGroupStatePartitionMetadataValue40),
    'ShareSnapshotValue': ('4.0', ShareSnapshotValue40),
    'ShareUpdateValue': ('4.0', ShareUpdateValue40),
}

# --- quorum-state and the classic consumer protocol --------------------------------------------

QuorumStateData = Message('QuorumStateData', valid='0-1', flexible='0+', fields=(
    F('ClusterId', 'string', '0'),
    F('LeaderId', 'int32', '0+', default='-1'),
    F('LeaderEpoch', 'int32', '0+', default='-1'),
    F('VotedId', 'int32', '0+', default='-1'),
    F('VotedDirectoryId', 'uuid', '1+'),
    F('AppliedOffset', 'int64', '0'),
    F('CurrentVoters', '[]Voter', '0', nullable='0', fields=(
        F('VoterId', 'int32', '0'),
    )),
))

ConsumerProtocolSubscription = Message('ConsumerProtocolSubscription', valid='0-3', flexible='none', fields=(
    F('Topics', '[]string', '0+'),
    F('UserData', 'bytes', '0+', nullable='0+', default='null'),
    F('OwnedPartitions', '[]TopicPartition', '1+', fields=(
        F('Topic', 'string', '1+'),
        F('Partitions', '[]int32', '1+'),
    )),
    F('GenerationId', 'int32', '2+', default='-1'),
    F('RackId', 'string', '3+', nullable='3+', default='null'),
))

ConsumerProtocolAssignment = Message('ConsumerProtocolAssignment', valid='0-3', flexible='none', fields=(
    F('AssignedPartitions', '[]TopicPartition', '0+', fields=(
        F('Topic', 'string', '0+'),
        F('Partitions', '[]int32', '0+'),
    )),
    F('UserData', 'bytes', '0+', nullable='0+', default='null'),
))


METADATA_RECORDS = {m.api_key: m for m in (
    AbortTransactionRecord, AccessControlEntryRecord, BeginTransactionRecord, BrokerRegistrationChangeRecord,
    ClearElrRecord, ClientQuotaRecord, ConfigRecord, DelegationTokenRecord, EndTransactionRecord,
    FeatureLevelRecord, FenceBrokerRecord, NoOpRecord, PartitionChangeRecord, PartitionRecord, ProducerIdsRecord,
    RegisterBrokerRecord, RegisterControllerRecord, RemoveAccessControlEntryRecord, RemoveDelegationTokenRecord,
    RemoveTopicRecord, RemoveUserScramCredentialRecord, TopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord,
    UnregisterControllerRecord, UserScramCredentialRecord, ZkMigrationStateRecord)}

# __consumer_offsets record type (the key's int16 version prefix) -> (kind, key schema, value schema)
OFFSETS_RECORDS = {
    # type 0 is Kafka's LegacyOffsetCommitKey/Value (fields of OffsetCommitKey, value version 0 only, the
    # fields of OffsetCommitValue v0); its values are read with OffsetCommitValue's versions, as Kafka 3.x did
    0: ("offset_commit", OffsetCommitKey, OffsetCommitValue),
    1: ("offset_commit", OffsetCommitKey, OffsetCommitValue),
    2: ("group_metadata", GroupMetadataKey, GroupMetadataValue),
    3: ("consumer_group_metadata", ConsumerGroupMetadataKey, ConsumerGroupMetadataValue),
    4: ("consumer_group_partition_metadata", ConsumerGroupPartitionMetadataKey, ConsumerGroupPartitionMetadataValue),
    5: ("consumer_group_member_metadata", ConsumerGroupMemberMetadataKey, ConsumerGroupMemberMetadataValue),
    6: ("consumer_group_target_assignment_metadata", ConsumerGroupTargetAssignmentMetadataKey,
        ConsumerGroupTargetAssignmentMetadataValue),
    7: ("consumer_group_target_assignment_member", ConsumerGroupTargetAssignmentMemberKey,
        ConsumerGroupTargetAssignmentMemberValue),
    8: ("consumer_group_current_member_assignment", ConsumerGroupCurrentMemberAssignmentKey,
        ConsumerGroupCurrentMemberAssignmentValue),
    9: ("share_group_partition_metadata", ShareGroupPartitionMetadataKey, ShareGroupPartitionMetadataValue),  # 4.0
    10: ("share_group_member_metadata", ShareGroupMemberMetadataKey, ShareGroupMemberMetadataValue),
    11: ("share_group_metadata", ShareGroupMetadataKey, ShareGroupMetadataValue),
    12: ("share_group_target_assignment_metadata", ShareGroupTargetAssignmentMetadataKey,
         ShareGroupTargetAssignmentMetadataValue),
    13: ("share_group_target_assignment_member", ShareGroupTargetAssignmentMemberKey,
         ShareGroupTargetAssignmentMemberValue),
    14: ("share_group_current_member_assignment", ShareGroupCurrentMemberAssignmentKey,
         ShareGroupCurrentMemberAssignmentValue),
    15: ("share_group_state_partition_metadata", ShareGroupStatePartitionMetadataKey,
         ShareGroupStatePartitionMetadataValue),
    16: ("consumer_group_regular_expression", ConsumerGroupRegularExpressionKey, ConsumerGroupRegularExpressionValue),
    17: ("streams_group_metadata", StreamsGroupMetadataKey, StreamsGroupMetadataValue),
    # 18 and 24 are not record types
    19: ("streams_group_member_metadata", StreamsGroupMemberMetadataKey, StreamsGroupMemberMetadataValue),
    20: ("streams_group_target_assignment_metadata", StreamsGroupTargetAssignmentMetadataKey,
         StreamsGroupTargetAssignmentMetadataValue),
    21: ("streams_group_target_assignment_member", StreamsGroupTargetAssignmentMemberKey,
         StreamsGroupTargetAssignmentMemberValue),
    22: ("streams_group_current_member_assignment", StreamsGroupCurrentMemberAssignmentKey,
         StreamsGroupCurrentMemberAssignmentValue),
    23: ("streams_group_topology", StreamsGroupTopologyKey, StreamsGroupTopologyValue),
}

# __share_group_state record type -> (kind, key, value)
SHARE_STATE_RECORDS = {0: ("share_snapshot", ShareSnapshotKey, ShareSnapshotValue),
                       1: ("share_update", ShareUpdateKey, ShareUpdateValue)}

# __remote_log_metadata: the value is an ApiMessageAndVersion (apiKey, version as unsigned varints)
REMOTE_LOG_METADATA_RECORDS = {m.api_key: m for m in (
    RemoteLogSegmentMetadataRecord, RemoteLogSegmentMetadataUpdateRecord, RemotePartitionDeleteMetadataRecord,
    RemoteLogSegmentMetadataSnapshotRecord)}

# every schema in this module (for the round-trip property tests)
ALL_MESSAGES = tuple(v for v in dict(globals()).values() if isinstance(v, Message))
