/**
 * The shape of src/broker/group-api.ts (GroupRequestContext), restated here so the coordinator
 * does not import from the broker layer above it; TypeScript's structural typing makes the
 * GroupCoordinator assignable to the broker's GroupApi (test/coordinator checks that it is).
 */
export interface GroupRequestContext {
  readonly apiVersion: number;
  readonly clientId: string | null;
  /** The client's address, for DescribeGroups' clientHost. */
  readonly clientHost: string;
  /** The listener the request came in on: FindCoordinator answers with its endpoint (absent: PLAINTEXT). */
  readonly listenerName?: string;
}

/** API keys of the consumer-group set, with the versions the coordinator implements. */
export const GROUP_API_VERSIONS: ReadonlyMap<number, { readonly min: number; readonly max: number }> =
  new Map([
    [8, { min: 2, max: 9 }], // OffsetCommit (v0-1 removed in Kafka 4, KIP-896)
    [9, { min: 1, max: 9 }], // OffsetFetch (v0 removed in Kafka 4)
    [10, { min: 0, max: 6 }], // FindCoordinator
    [11, { min: 2, max: 9 }], // JoinGroup (v0-1 removed in Kafka 4)
    [12, { min: 0, max: 4 }], // Heartbeat
    [13, { min: 0, max: 5 }], // LeaveGroup
    [14, { min: 0, max: 5 }], // SyncGroup
    [15, { min: 0, max: 5 }], // DescribeGroups
    [16, { min: 0, max: 5 }], // ListGroups
    [42, { min: 0, max: 2 }], // DeleteGroups
    [47, { min: 0, max: 0 }], // OffsetDelete
    [28, { min: 0, max: 4 }], // TxnOffsetCommit
  ]);

/** KIP-848's APIs, served when group.coordinator.rebalance.protocols lists 'consumer'. */
export const CONSUMER_GROUP_API_VERSIONS: ReadonlyMap<
  number,
  { readonly min: number; readonly max: number }
> = new Map([
  [68, { min: 0, max: 1 }], // ConsumerGroupHeartbeat
  [69, { min: 0, max: 0 }], // ConsumerGroupDescribe
]);

/** The APIs this coordinator serves: KIP-848's only where group.coordinator.rebalance.protocols lists 'consumer'. */
export function groupApiVersions(
  rebalanceProtocols: readonly string[],
): ReadonlyMap<number, { readonly min: number; readonly max: number }> {
  return rebalanceProtocols.includes('consumer')
    ? new Map([...GROUP_API_VERSIONS, ...CONSUMER_GROUP_API_VERSIONS])
    : GROUP_API_VERSIONS;
}
