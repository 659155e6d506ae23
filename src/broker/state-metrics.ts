/**
 * The metrics computed from the broker's state when scraped (Kafka's ReplicaManager, Partition,
 * Log and replication-quota gauges): nothing is kept up to date between scrapes. As in Kafka,
 * the partition-state counts are the LEADER's view — each partition is counted by the broker
 * that leads it, so summing over the cluster counts each once — and the per-replica lag is the
 * leader's model of its followers, the one SkiffDescribeReplication shows the tools
 * (replicaViews): leader LEO − replica LEO, in offsets and in bytes of the leader's log, for every
 * follower, in the ISR or not (Kafka's offsetLag is 0 for a replica outside the ISR).
 * Registered once by the Broker on its registry.
 */
import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import type { Registry } from '../metrics/registry.js';
import { type Emit, PerScrape, registerScrapeFamily } from '../metrics/scrape-family.js';
import { type LabelSet, LabelSets, registerTextFamily } from '../metrics/text-family.js';
import type { PartitionLeaderState } from '../replication/leader-state.js';
import type { Partition } from '../replication/partition.js';
import type { ObservedReplicationRate } from '../replication/quota.js';
import type { Log } from '../storage/log.js';
import type { LogManager } from '../storage/log-manager.js';
import type { ClientQuotaManager, ClientQuotas, QuotaEntityReading } from './client-quota-manager.js';
import { replicaViews } from './handlers/skiff-replication.js';
import type { ReplicaManager } from './replica-manager.js';

export interface BrokerStateView {
  readonly nodeId: number;
  readonly clock: Clock;
  readonly replicaManager: ReplicaManager;
  readonly logManager: LogManager;
  /**
   * Open client and replica connections by listener name (Kafka's connection-count per listener),
   * and sockets refused at max.connections since start.
   */
  connections(): { readonly open: ReadonlyMap<string, number>; readonly rejected: number };
  /** The client quota managers (absent: no client quota families). */
  readonly clientQuotas?: ClientQuotas;
}

interface PartitionCounts {
  readonly partitions: number;
  readonly leaders: number;
  readonly underReplicated: number;
  readonly underMinIsr: number;
  readonly atMinIsr: number;
}

function partitionCounts(v: BrokerStateView): PartitionCounts {
  const replication = v.replicaManager.replication;
  let partitions = 0;
  let leaders = 0;
  let underReplicated = 0;
  let underMinIsr = 0;
  let atMinIsr = 0;
  for (const p of v.replicaManager.allPartitions()) {
    partitions++;
    const l = replication.leader(p.key);
    if (l === undefined) continue;
    leaders++;
    const isr = l.isr.length;
    const minIsr = l.effectiveMinIsr();
    if (isr < l.replicas.length) underReplicated++;
    if (isr < minIsr) underMinIsr++;
    else if (isr === minIsr) atMinIsr++;
  }
  return { partitions, leaders, underReplicated, underMinIsr, atMinIsr };
}

function registerPartitionCounts(registry: Registry, v: BrokerStateView): void {
  const counts = new PerScrape(() => partitionCounts(v));
  const family = (name: string, help: string, pick: (c: PartitionCounts) => number): void =>
    registerScrapeFamily(registry, name, help, 'gauge', (emit) => emit({}, pick(counts.get())));
  family(
    'skiff_partitions',
    "Partitions with a replica on this broker (Kafka's PartitionCount)",
    (c) => c.partitions,
  );
  family('skiff_leader_partitions', "Partitions this broker leads (Kafka's LeaderCount)", (c) => c.leaders);
  family(
    'skiff_under_replicated_partitions',
    "Partitions led here whose ISR is smaller than the replica set (Kafka's UnderReplicatedPartitions)",
    (c) => c.underReplicated,
  );
  family(
    'skiff_under_min_isr_partitions',
    "Partitions led here whose ISR is below min.insync.replicas, so acks=all produce fails (Kafka's UnderMinIsrPartitionCount)",
    (c) => c.underMinIsr,
  );
  family(
    'skiff_at_min_isr_partitions',
    "Partitions led here whose ISR is exactly min.insync.replicas: one more loss stops acks=all (Kafka's AtMinIsrPartitionCount)",
    (c) => c.atMinIsr,
  );
  const changes = (emit: Emit, pick: 'shrinks' | 'expands'): void =>
    emit({}, v.replicaManager.replication.isrChanges()[pick]);
  registerScrapeFamily(
    registry,
    'skiff_isr_shrinks_total',
    "ISR shrinks of partitions led here, committed, whoever proposed them (Kafka's IsrShrinksPerSec)",
    'counter',
    (emit) => changes(emit, 'shrinks'),
  );
  registerScrapeFamily(
    registry,
    'skiff_isr_expands_total',
    "ISR expansions of partitions led here, committed (Kafka's IsrExpandsPerSec)",
    'counter',
    (emit) => changes(emit, 'expands'),
  );
}

interface ReplicaRow {
  readonly labels: LabelSet;
  readonly lagOffsets: bigint;
  readonly lagBytes: bigint;
  readonly inIsr: boolean;
}

/** Every replica of every partition led here, as the leader sees it. */
function replicaRows(v: BrokerStateView, sets: LabelSets<PartitionLeaderState>): ReplicaRow[] {
  const replication = v.replicaManager.replication;
  const nowMs = v.clock.nowMs();
  const rows: ReplicaRow[] = [];
  for (const l of replication.leaderStates()) {
    if (!l.isLeader) continue;
    for (const r of replicaViews(l, v.nodeId, nowMs, replication.quotas?.leader)) {
      rows.push({
        labels: sets.of(l, r.brokerId, () => ({
          topic: l.topic,
          partition: l.partition,
          broker: r.brokerId,
        })),
        lagOffsets: r.lag,
        lagBytes: r.bytesToCatchUp,
        inIsr: r.inIsr,
      });
    }
  }
  return rows;
}

function registerReplicaFamilies(registry: Registry, v: BrokerStateView): void {
  const sets = new LabelSets<PartitionLeaderState>();
  const rows = new PerScrape(() => replicaRows(v, sets));
  // A follower that has not fetched since this broker became leader has no known LEO: no sample.
  registerTextFamily(
    registry,
    'skiff_replica_lag_offsets',
    "Leader LEO minus the replica's LEO (as of its latest fetch), per replica of partitions led here, in the ISR or not",
    'gauge',
    (emit) => {
      for (const r of rows.get()) if (r.lagOffsets >= 0n) emit(r.labels, r.lagOffsets);
    },
  );
  registerTextFamily(
    registry,
    'skiff_replica_lag_bytes',
    "Bytes of the leader's log the replica has yet to copy, per replica of partitions led here",
    'gauge',
    (emit) => {
      for (const r of rows.get()) if (r.lagBytes >= 0n) emit(r.labels, r.lagBytes);
    },
  );
  registerTextFamily(
    registry,
    'skiff_replica_in_isr',
    '1 when the replica is in the ISR, else 0, per replica of partitions led here',
    'gauge',
    (emit) => {
      for (const r of rows.get()) emit(r.labels, r.inIsr ? 1 : 0);
    },
  );
}

interface LogRow {
  readonly labels: LabelSet;
  readonly log: Log;
}

function registerLogFamilies(registry: Registry, v: BrokerStateView): void {
  const sets = new LabelSets<Partition>();
  const rows = new PerScrape(() =>
    v.replicaManager.allPartitions().map(
      (p): LogRow => ({
        labels: sets.of(p, 0, () => ({ topic: p.topic, partition: p.index })),
        log: p.log,
      }),
    ),
  );
  const log = (name: string, help: string, value: (l: Log) => number | bigint): void =>
    registerTextFamily(registry, name, help, 'gauge', (emit) => {
      for (const r of rows.get()) emit(r.labels, value(r.log));
    });
  log(
    'skiff_log_size_bytes',
    "Bytes of the partition's log on this broker (Kafka's Log Size)",
    (l) => l.size,
  );
  log(
    'skiff_log_segments',
    "Segments of the partition's log (Kafka's NumLogSegments)",
    (l) => l.local.segments.size,
  );
  log(
    'skiff_log_start_offset',
    "The partition's log start offset on this broker (Kafka's LogStartOffset)",
    (l) => l.logStartOffset,
  );
  log(
    'skiff_log_end_offset',
    "The partition's log end offset (LEO) on this broker (Kafka's LogEndOffset)",
    (l) => l.logEndOffset,
  );
  registerScrapeFamily(
    registry,
    'skiff_log_deletion_pending_bytes',
    'Bytes deleted from the logs (retention, truncation, deleted partitions) still on disk for file.delete.delay.ms',
    'gauge',
    (emit) => emit({}, v.logManager.bytesAwaitingDeletion()),
  );
  registerScrapeFamily(
    registry,
    'skiff_offline_log_directory_count',
    "Log dirs of this broker that failed and are offline until it restarts (Kafka's OfflineLogDirectoryCount)",
    'gauge',
    (emit) => emit({}, v.logManager.logDirs.length - v.logManager.liveLogDirs.length),
  );
}

function registerReplicationFamilies(registry: Registry, v: BrokerStateView): void {
  const observed = new PerScrape(() => {
    const q = v.replicaManager.replication.quotas;
    const nowMs = v.clock.nowMs();
    return q === undefined
      ? null
      : { leader: q.leader.observed(nowMs), follower: q.follower.observed(nowMs) };
  });
  const total = (
    name: string,
    help: string,
    side: 'leader' | 'follower',
    pick: (o: ObservedReplicationRate) => number,
  ): void =>
    registerScrapeFamily(registry, name, help, 'counter', (emit) => {
      const o = observed.get();
      if (o !== null) emit({}, pick(o[side]));
    });
  total(
    'skiff_replication_bytes_in_total',
    "Bytes this broker appended as a follower, all partitions (Kafka's ReplicationBytesInPerSec)",
    'follower',
    (o) => o.totalBytes,
  );
  total(
    'skiff_replication_bytes_out_total',
    "Bytes this broker sent to followers as leader (Kafka's ReplicationBytesOutPerSec)",
    'leader',
    (o) => o.totalBytes,
  );
  total(
    'skiff_replication_throttled_bytes_in_total',
    'Of the follower bytes, those of partitions in follower.replication.throttled.replicas (metered by the throttle)',
    'follower',
    (o) => o.throttledTotalBytes,
  );
  total(
    'skiff_replication_throttled_bytes_out_total',
    'Of the leader bytes, those of partitions in leader.replication.throttled.replicas (metered by the throttle)',
    'leader',
    (o) => o.throttledTotalBytes,
  );
  registerScrapeFamily(
    registry,
    'skiff_replication_throttle_rate_bytes_per_second',
    'The replication throttle in effect, by side (leader/follower.replication.throttled.rate); absent when unlimited',
    'gauge',
    (emit) => {
      const o = observed.get();
      if (o === null) return;
      for (const s of [o.leader, o.follower])
        if (s.throttleRate !== null) emit({ side: s.side }, s.throttleRate);
    },
  );
  registerScrapeFamily(
    registry,
    'skiff_replication_observed_bytes_per_second',
    "Replication bytes/s over the quota's window (what the throttle compares with its rate), by side, of all partitions or of the throttled ones",
    'gauge',
    (emit) => {
      const o = observed.get();
      if (o === null) return;
      for (const s of [o.leader, o.follower]) {
        emit({ side: s.side, partitions: 'all' }, s.bytesPerSec);
        emit({ side: s.side, partitions: 'throttled' }, s.throttledBytesPerSec);
      }
    },
  );
}

function registerServerFamilies(registry: Registry, v: BrokerStateView): void {
  registerScrapeFamily(
    registry,
    'skiff_purgatory_size',
    "Requests parked until a partition changes or they time out: acks=all produces, long-polling fetches (Kafka's PurgatorySize)",
    'gauge',
    (emit) => emit({}, v.replicaManager.replication.purgatory.watched),
  );
  registerScrapeFamily(
    registry,
    'skiff_connections',
    'Open connections (clients and replica fetchers), by listener',
    'gauge',
    (emit) => {
      for (const [listener, n] of v.connections().open) emit({ listener }, n);
    },
  );
  registerScrapeFamily(
    registry,
    'skiff_connections_rejected_total',
    'Sockets closed at accept because max.connections was reached',
    'counter',
    (emit) => emit({}, v.connections().rejected),
  );
}

/**
 * Kafka's per-entity quota metrics (groups Produce, Fetch, Request: byte-rate, request-time,
 * throttle-time), for the entities metered within the last quota window — at most
 * LIMITS.clientQuotaMetricEntities per quota type, the busiest, so client ids cannot grow the
 * label sets without bound. `user` and `client_id` are the entity's tags ('' where the quota level
 * leaves them out, as in Kafka).
 */
function registerClientQuotaFamilies(registry: Registry, v: BrokerStateView, quotas: ClientQuotas): void {
  const managers = quotas.all;
  const readings = new PerScrape(() => {
    const nowMs = v.clock.nowMs();
    return managers.map((m) => ({
      m,
      rows: m.enabled ? m.readings(nowMs, LIMITS.clientQuotaMetricEntities) : [],
    }));
  });
  const family = (
    name: string,
    help: string,
    include: (m: ClientQuotaManager) => boolean,
    value: (r: QuotaEntityReading) => number | null,
  ): void =>
    registerScrapeFamily(registry, name, help, 'gauge', (emit) => {
      for (const { m, rows } of readings.get()) {
        if (!include(m)) continue;
        for (const r of rows) {
          const x = value(r);
          if (x !== null) emit({ quota_type: m.type, user: r.user, client_id: r.clientId }, x);
        }
      }
    });
  family(
    'skiff_client_quota_byte_rate',
    "Bytes/s an entity produced (quota_type produce) or consumers fetched (fetch) over the quota window (Kafka's byte-rate)",
    (m) => m.type === 'produce' || m.type === 'fetch',
    (r) => r.value,
  );
  family(
    'skiff_client_quota_request_time_percent',
    "Percent of one thread an entity's requests took to handle over the quota window (Kafka's request-time)",
    (m) => m.type === 'request',
    (r) => r.value,
  );
  family(
    'skiff_client_quota_mutation_rate',
    "Partitions an entity created, added or deleted per second over the controller quota window (quota_type controller_mutation; Kafka's mutation-rate)",
    (m) => m.type === 'controller_mutation',
    (r) => r.value,
  );
  family(
    'skiff_client_quota_tokens',
    "Credits left in an entity's controller mutation token bucket, partitions; below zero its topic mutations are refused or throttled (Kafka's tokens)",
    (m) => m.type === 'controller_mutation',
    (r) => r.tokens,
  );
  family(
    'skiff_client_quota_throttle_time_ms',
    "Mean throttle time of an entity's throttled responses over the last minute (Kafka's throttle-time)",
    () => true,
    (r) => r.throttleTimeMs,
  );
  family(
    'skiff_client_quota_limit',
    'The quota applied to the entity: producer_byte_rate, consumer_byte_rate, request_percentage or controller_mutation_rate',
    () => true,
    (r) => r.limit,
  );
}

/** Registers every scrape-time family of one broker. */
export function registerBrokerStateMetrics(registry: Registry, v: BrokerStateView): void {
  registerPartitionCounts(registry, v);
  registerReplicaFamilies(registry, v);
  registerLogFamilies(registry, v);
  registerReplicationFamilies(registry, v);
  registerServerFamilies(registry, v);
  if (v.clientQuotas) registerClientQuotaFamilies(registry, v, v.clientQuotas);
}
