/**
 * Group coordinator settings, named as Kafka's broker configs so an operator can carry values over.
 * One table so that every bound the coordinator enforces is visible in one place.
 */
export interface GroupCoordinatorConfig {
  /** group.min.session.timeout.ms: a JoinGroup asking for less gets INVALID_SESSION_TIMEOUT. */
  groupMinSessionTimeoutMs: number;
  /** group.max.session.timeout.ms: a JoinGroup asking for more gets INVALID_SESSION_TIMEOUT. */
  groupMaxSessionTimeoutMs: number;
  /** group.initial.rebalance.delay.ms: how long an empty group waits for more members before its first generation. */
  groupInitialRebalanceDelayMs: number;
  /**
   * group.max.size: members (joined plus those holding a MEMBER_ID_REQUIRED id) per group.
   * Kafka's default is Integer.MAX_VALUE; we bound it because every member costs memory and a timer,
   * and a client looping on MEMBER_ID_REQUIRED could otherwise grow a group without limit.
   * 1,000 is far above any real consumer group (a member per partition of a large topic).
   */
  groupMaxSize: number;
  /** offsets.topic.num.partitions: the __consumer_offsets partition count; decides a group's coordinator. */
  offsetsTopicNumPartitions: number;
  /** offset.metadata.max.bytes: longer commit metadata gets OFFSET_METADATA_TOO_LARGE. */
  offsetMetadataMaxBytes: number;
  /** offsets.retention.minutes, in ms: how long offsets of an empty group (or a standalone consumer) live. */
  offsetsRetentionMs: number;
  /** offsets.retention.check.interval.ms: how often expired offsets are looked for. */
  offsetsRetentionCheckIntervalMs: number;
  /**
   * How long a brand-new member may wait in a JoinGroup before it is dropped (Kafka's
   * NewMemberJoinTimeoutMs, not a config there): a client that gave up on a long rebalance
   * and retried would otherwise leave a defunct member behind for the whole rebalance timeout.
   */
  newMemberJoinTimeoutMs: number;
  /**
   * group.coordinator.rebalance.protocols: 'classic' always (Kafka requires it), 'consumer' to
   * serve KIP-848's ConsumerGroupHeartbeat and ConsumerGroupDescribe (not advertised otherwise).
   */
  rebalanceProtocols: readonly string[];
  /** group.consumer.session.timeout.ms: a consumer-protocol member without a heartbeat for this long is fenced. */
  consumerGroupSessionTimeoutMs: number;
  /** group.consumer.heartbeat.interval.ms: the interval each ConsumerGroupHeartbeat answer gives. */
  consumerGroupHeartbeatIntervalMs: number;
  /** group.consumer.max.size: members per consumer-protocol group (GROUP_MAX_SIZE_REACHED beyond). */
  consumerGroupMaxSize: number;
  /** group.consumer.assignors, as assignor names ('uniform', 'range'); the first is the default. */
  consumerGroupAssignors: readonly string[];
}

export const DEFAULT_GROUP_COORDINATOR_CONFIG: Readonly<GroupCoordinatorConfig> = Object.freeze({
  groupMinSessionTimeoutMs: 6_000,
  groupMaxSessionTimeoutMs: 1_800_000,
  groupInitialRebalanceDelayMs: 3_000,
  groupMaxSize: 1_000,
  offsetsTopicNumPartitions: 50,
  offsetMetadataMaxBytes: 4_096,
  offsetsRetentionMs: 7 * 24 * 60 * 60 * 1000,
  offsetsRetentionCheckIntervalMs: 600_000,
  newMemberJoinTimeoutMs: 5 * 60 * 1000,
  rebalanceProtocols: ['classic', 'consumer'],
  consumerGroupSessionTimeoutMs: 45_000,
  consumerGroupHeartbeatIntervalMs: 5_000,
  consumerGroupMaxSize: 1_000,
  consumerGroupAssignors: ['uniform', 'range'],
});

export function groupCoordinatorConfig(
  overrides: Partial<GroupCoordinatorConfig> = {},
): GroupCoordinatorConfig {
  const config = { ...DEFAULT_GROUP_COORDINATOR_CONFIG, ...overrides };
  if (config.groupMinSessionTimeoutMs > config.groupMaxSessionTimeoutMs) {
    throw new RangeError('group.min.session.timeout.ms must not exceed group.max.session.timeout.ms');
  }
  if (!Number.isInteger(config.offsetsTopicNumPartitions) || config.offsetsTopicNumPartitions < 1) {
    throw new RangeError('offsets.topic.num.partitions must be a positive integer');
  }
  if (config.groupMaxSize < 1) throw new RangeError('group.max.size must be at least 1');
  if (config.consumerGroupMaxSize < 1) throw new RangeError('group.consumer.max.size must be at least 1');
  if (!config.rebalanceProtocols.includes('classic')) {
    throw new RangeError('group.coordinator.rebalance.protocols must contain classic');
  }
  if (config.consumerGroupAssignors.length === 0) {
    throw new RangeError('group.consumer.assignors must name at least one assignor');
  }
  if (config.consumerGroupHeartbeatIntervalMs >= config.consumerGroupSessionTimeoutMs) {
    throw new RangeError(
      'group.consumer.heartbeat.interval.ms must be less than group.consumer.session.timeout.ms',
    );
  }
  return config;
}

/** The internal topic holding offsets and group metadata. */
export const CONSUMER_OFFSETS_TOPIC = '__consumer_offsets';
