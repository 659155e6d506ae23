/**
 * Every bound Skiff sets for itself, in one table (TigerBeetle keeps its in constants.zig): queues,
 * pools, retries, request sizes. Kafka's own limits and defaults are not here — those come from the
 * generated protocol tables and config-defs.ts; the metadata store's etcd-shaped limits are
 * STORE_LIMITS (metadata/store.ts).
 */
export const LIMITS = Object.freeze({
  /** Controller requests one broker may have in flight. */
  controllerRequestsInFlight: 1000,
  /** The embedded store's journal beyond which it is folded into a new snapshot. */
  metadataJournalBytes: 64 * 1024 * 1024,
  /** Callers that may wait for a metadata revision at once; more is a bug in the caller. */
  metadataRevisionWaiters: 10_000,
  /** Topics one Metadata request may auto-create (Kafka has no bound): one client cannot create thousands. */
  autoCreatedTopicsPerRequest: 1000,
  /** ACLs one CreateAcls or DeleteAcls may change: Kafka's controller's records per user operation. */
  aclsPerRequest: 10_000,
  /** Random draws for an unused fetch session id before giving up (each collides with p ≤ slots / 2^31). */
  fetchSessionIdAttempts: 16,
  /** An empty offset index is plausible only for a segment no bigger than one index interval plus this. */
  emptyIndexSegmentSlackBytes: 1024 * 1024,
  /** The largest read buffer the pool keeps for reuse. */
  pooledReadBufferBytes: 16 * 1024 * 1024,
  /** Free read buffers kept at most, in bytes, over all sizes. */
  freeReadBufferBytes: 64 * 1024 * 1024,
  /** Latency samples producer-perf-test keeps (as Kafka's), taking every k-th record beyond. */
  perfLatencySamples: 500_000,
  /** Longest wait for the follower quota before the throttle settings are looked at again. */
  followerQuotaWaitMs: 1000,
  /** Operator events (recoveries, truncations, rebuilds, deletions) a broker keeps for the dashboard. */
  replicationEventsKept: 256,
  /** Start-up work (log loading, the first image's partitions) between two turns of the event loop: heartbeats keep the session meanwhile. */
  startupSliceMs: 50,
  /**
   * A metadata image's work on a running broker (a topic of thousands of partitions) between two
   * turns of the event loop: longer than at start-up, so that a common change — __consumer_offsets'
   * 50 partitions — is still applied at once; far below the heartbeat interval.
   */
  imageSliceMs: 500,
  /** Brokers one `skiff up` may start. */
  upBrokers: 64,
  /** Bodies the launcher's control API accepts or returns; anything larger is refused. */
  controlBodyBytes: 1 << 20,
  /** Attempts to read or create the cluster id (a create and a read each); more than two means the key keeps vanishing. */
  clusterIdAttempts: 5,
  /** Queued controller tasks; beyond this, requests wait in the store until the queue drains. */
  controllerQueuedTasks: 10_000,
  /** Attempts of one controller change when another writer got there first (a CAS conflict). */
  controllerConflictRetries: 5,
  /** Partitions one topic may have: a bound, not a Kafka rule. */
  partitionsPerTopic: 100_000,
  /** Coordinator bound on group.max.size (Kafka's default is Integer.MAX_VALUE): every member costs memory and a timer. */
  groupMaxSize: 1_000,
  /** Connections when max.connections is not set (Kafka's default is Integer.MAX_VALUE): each costs buffers and a socket, and one runaway client must not exhaust the process. */
  connections: 10_000,
  /**
   * Longest TLS handshake an SSL listener waits for (Node's default is 2 minutes; Kafka only has the
   * idle limit): a handshake takes milliseconds, and a socket that stalls in it holds a connection slot.
   */
  tlsHandshakeMs: 10_000,
  /** Client quota entities metered at once per quota type (each a Rate); beyond, the longest idle is dropped. */
  clientQuotaSensors: 10_000,
  /** A SASL exchange not complete this long after its first request is failed (Kafka has no bound; a slow client holds a connection otherwise). */
  saslAuthenticationMs: 30_000,
  /** Client quota entities per quota type in the metrics, the busiest of the last quota window. */
  clientQuotaMetricEntities: 100,
});
