"""Kafka's internal-topic record schemas: field facts (names, types, versions, tags, defaults) carried
over from the message definitions of apache/kafka (group-coordinator, transaction-coordinator,
metadata and clients resources) into :mod:`specs.message_schema`'s declarative form.
"""
from .message_schema import F, Message

# --- __consumer_offsets -------------------------------------------------------------------
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
))

# --- __transaction_state ------------------------------------------------------------------
TransactionLogKey = Message('TransactionLogKey', valid='0', flexible='none', fields=(
    F('TransactionalId', 'string', '0'),
))

TransactionLogValue = Message('TransactionLogValue', valid='0-1', flexible='1+', fields=(
    F('ProducerId', 'int64', '0+'),
    F('PreviousProducerId', 'int64', '1+', tagged='1+', tag=0, default=-1),
    F('NextProducerId', 'int64', '1+', tagged='1+', tag=1, default=-1),
    F('ProducerEpoch', 'int16', '0+'),
    F('TransactionTimeoutMs', 'int32', '0+'),
    F('TransactionStatus', 'int8', '0+'),
    F('TransactionPartitions', '[]PartitionsSchema', '0+', nullable='0+', fields=(
        F('Topic', 'string', '0+'),
        F('PartitionIds', '[]int32', '0+'),
    )),
    F('TransactionLastUpdateTimestampMs', 'int64', '0+'),
    F('TransactionStartTimestampMs', 'int64', '0+'),
    F('ClientTransactionVersion', 'int16', '1+', tagged='1+', tag=2, default=0),
))

#: TransactionLogValue.TransactionStatus -> the state name Kafka's admin APIs report
TRANSACTION_STATES = {0: "Empty", 1: "Ongoing", 2: "PrepareCommit", 3: "PrepareAbort", 4: "CompleteCommit",
                      5: "CompleteAbort", 6: "Dead", 7: "PrepareEpochFence"}

# --- __cluster_metadata control records -----------------------------------------------------
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

# --- __cluster_metadata records (by apiKey) -------------------------------------------------
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

BrokerRegistrationChangeRecord = Message('BrokerRegistrationChangeRecord', valid='0-2', flexible='0+', api_key=17, fields=(
    F('BrokerId', 'int32', '0+'),
    F('BrokerEpoch', 'int64', '0+'),
    F('Fenced', 'int8', '0+', tagged='0+', tag=0),
    F('InControlledShutdown', 'int8', '1+', tagged='1+', tag=1),
    F('LogDirs', '[]uuid', '2+', tagged='2+', tag='2'),
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

RegisterBrokerRecord = Message('RegisterBrokerRecord', valid='0-3', flexible='0+', api_key=0, fields=(
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
    F('LogDirs', '[]uuid', '3+', tagged='3+', tag='0'),
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

METADATA_RECORDS = {m.api_key: m for m in (AbortTransactionRecord, AccessControlEntryRecord, BeginTransactionRecord, BrokerRegistrationChangeRecord, ClientQuotaRecord, ConfigRecord, DelegationTokenRecord, EndTransactionRecord, FeatureLevelRecord, FenceBrokerRecord, NoOpRecord, PartitionChangeRecord, PartitionRecord, ProducerIdsRecord, RegisterBrokerRecord, RegisterControllerRecord, RemoveAccessControlEntryRecord, RemoveDelegationTokenRecord, RemoveTopicRecord, RemoveUserScramCredentialRecord, TopicRecord, UnfenceBrokerRecord, UnregisterBrokerRecord, UserScramCredentialRecord, ZkMigrationStateRecord)}
