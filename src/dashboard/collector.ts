/**
 * The dashboard's one view of the cluster, polled: the launcher's broker list (who is up, the
 * controller), Metadata (partitions, leaders, replicas, ISR) and every live broker's
 * SkiffDescribeReplication (the leader's view of each replica's lag, the replication rates and
 * throttles, the ISR history). The same sources as the tools — no second model of replication.
 */
import type { KafkaClient } from '../client/kafka-client.js';
import { describeReplicationAll } from '../client/skiff-admin.js';
import type { SkiffDescribeReplicationResponse } from '../protocol/generated/SkiffDescribeReplicationResponse.js';
import type {
  BrokerView,
  EventView,
  IsrChangeView,
  PartitionView,
  ReplicaLag,
  Snapshot,
} from './snapshot.js';

/** The launcher's view of one broker process (its control API's status report). */
export interface LaunchedBroker {
  readonly id: number;
  readonly port: number;
  readonly state: string;
  readonly pid: number | null;
  readonly registered: boolean;
  readonly controller: boolean;
}

/** The launcher as the dashboard needs it (src/cluster/launcher.ts's Launcher is one). */
export interface ClusterSource {
  readonly clusterId: string;
  status(): { readonly brokers: readonly LaunchedBroker[] };
}

/** How many ISR changes the snapshot carries (newest kept). */
const ISR_CHANGES_SHOWN = 200;

const num = (v: bigint): number => Number(v);

/** Polls the cluster through `client` (bootstrapped with every broker) into Snapshots. */
export class Collector {
  constructor(
    private readonly source: ClusterSource,
    private readonly client: KafkaClient,
    private readonly now: () => number,
  ) {}

  async poll(): Promise<Snapshot> {
    const launched = this.source.status().brokers;
    const problems: string[] = [];
    const running = launched.filter((b) => b.state === 'running').map((b) => b.id);
    let metadata: Awaited<ReturnType<KafkaClient['fetchMetadata']>> | null = null;
    try {
      this.client.invalidateMetadata();
      metadata = await this.client.fetchMetadata(null);
    } catch (e) {
      problems.push(`Metadata: ${e instanceof Error ? e.message : String(e)}`);
    }
    // The ISR history is the controller's durable record, the same from every broker: asked of one
    // (each answer reads it from the metadata store); rates, lag and events come from every broker.
    const [first, ...rest] = running;
    const answers = new Map<number, SkiffDescribeReplicationResponse | Error>();
    if (first !== undefined) {
      const [withHistory, others] = await Promise.all([
        describeReplicationAll(this.client, [first], null, true),
        describeReplicationAll(this.client, rest, null, false),
      ]);
      for (const [id, a] of [...withHistory, ...others]) answers.set(id, a);
    }
    const replication = new Map<number, SkiffDescribeReplicationResponse>();
    for (const [id, a] of answers) {
      if (a instanceof Error) problems.push(`broker ${id}: ${a.message}`);
      else replication.set(id, a);
    }
    const partitions = metadata === null ? [] : partitionViews(metadata, replication);
    return {
      timeMs: this.now(),
      clusterId: this.source.clusterId,
      // The launcher's image knows the active controller; Metadata names a random live broker (KIP-590).
      controllerId: launched.find((b) => b.controller)?.id ?? -1,
      brokers: launched.map((b) => brokerView(b, replication.get(b.id))),
      partitions,
      underReplicated: partitions.filter((p) => p.leader >= 0 && p.isr.length < p.replicas.length).length,
      offline: partitions.filter((p) => p.leader < 0).length,
      isrChanges: isrChanges(replication),
      events: events(replication),
      problems,
    };
  }
}

function brokerView(b: LaunchedBroker, r: SkiffDescribeReplicationResponse | undefined): BrokerView {
  return {
    id: b.id,
    port: b.port,
    state: b.state,
    pid: b.pid,
    registered: b.registered,
    controller: b.controller,
    up: r !== undefined,
    leaderBytesPerSec: r === undefined ? -1 : num(r.leaderReplicationBytesPerSec),
    followerBytesPerSec: r === undefined ? -1 : num(r.followerReplicationBytesPerSec),
    leaderThrottleRate: r === undefined ? -1 : num(r.leaderThrottleRate),
    followerThrottleRate: r === undefined ? -1 : num(r.followerThrottleRate),
  };
}

function partitionViews(
  metadata: Awaited<ReturnType<KafkaClient['fetchMetadata']>>,
  replication: ReadonlyMap<number, SkiffDescribeReplicationResponse>,
): PartitionView[] {
  const out: PartitionView[] = [];
  const names = [...metadata.topics.keys()].filter((n) => !n.startsWith('__')).sort();
  for (const name of names) {
    const t = metadata.topics.get(name)!;
    for (const p of t.partitions) {
      const fromLeader = replication
        .get(p.leader)
        ?.topics.find((x) => x.name === name)
        ?.partitions.find((x) => x.partitionIndex === p.partition && x.role === 0);
      const lag: ReplicaLag[] =
        fromLeader?.replicas.map((r) => ({
          broker: r.brokerId,
          inIsr: r.inIsr,
          lagOffsets: num(r.lag),
          lagBytes: num(r.bytesToCatchUp),
          logEndOffset: num(r.logEndOffset),
        })) ?? [];
      out.push({
        topic: name,
        partition: p.partition,
        leader: p.leader,
        leaderEpoch: p.leaderEpoch,
        replicas: p.replicas,
        isr: p.isr,
        highWatermark: fromLeader === undefined ? -1 : num(fromLeader.highWatermark),
        logEndOffset: fromLeader === undefined ? -1 : num(fromLeader.logEndOffset),
        sizeBytes: fromLeader === undefined ? -1 : num(fromLeader.sizeBytes),
        lag,
      });
    }
  }
  return out;
}

/** Every broker's history of the partitions it hosts, merged: one entry per change, newest last. */
function isrChanges(replication: ReadonlyMap<number, SkiffDescribeReplicationResponse>): IsrChangeView[] {
  const seen = new Map<string, IsrChangeView>();
  for (const r of replication.values())
    for (const t of r.topics)
      for (const p of t.partitions)
        for (const h of p.history) {
          const v: IsrChangeView = {
            timeMs: num(h.timeMs),
            topic: t.name,
            partition: p.partitionIndex,
            kind: h.kind,
            leader: h.leaderId,
            leaderEpoch: h.leaderEpoch,
            oldIsr: h.oldIsr,
            newIsr: h.newIsr,
            reason: h.reason,
          };
          // The same change seen by several brokers (became-leader on one, metadata on another) stays apart.
          seen.set(`${v.timeMs}/${v.topic}/${v.partition}/${v.kind}/${v.newIsr.join(',')}`, v);
        }
  return [...seen.values()].sort((a, b) => a.timeMs - b.timeMs).slice(-ISR_CHANGES_SHOWN);
}

/** How many events the snapshot carries (newest kept). */
const EVENTS_SHOWN = 100;

/** The number a field holds (a bigint-safe JSON number or a decimal string), else null. */
function fieldNumber(fields: Record<string, unknown>, key: string): number | null {
  const v = fields[key];
  if (typeof v === 'number') return v;
  if (typeof v === 'string' && /^-?\d+$/.test(v)) return Number(v);
  return null;
}

function events(replication: ReadonlyMap<number, SkiffDescribeReplicationResponse>): EventView[] {
  const out: EventView[] = [];
  for (const [broker, r] of replication)
    for (const e of r.events) {
      let fields: Record<string, unknown> = {};
      try {
        fields = JSON.parse(e.fieldsJson) as Record<string, unknown>;
      } catch {
        // A line without readable fields still shows.
      }
      const topic = typeof fields.topic === 'string' ? fields.topic : null;
      const partition = fieldNumber(fields, 'partition');
      const named = typeof fields.partitionName === 'string' ? fields.partitionName : null;
      out.push({
        timeMs: num(e.timeMs),
        broker,
        event: e.event,
        level: e.level,
        partition: topic !== null && partition !== null ? `${topic}-${partition}` : named,
        bytesDiscarded:
          fieldNumber(fields, 'bytesDiscarded') ??
          fieldNumber(fields, 'truncatedBytes') ??
          fieldNumber(fields, 'bytes') ??
          -1,
        message: e.message,
      });
    }
  return out.sort((a, b) => a.timeMs - b.timeMs).slice(-EVENTS_SHOWN);
}
