/**
 * `skiff isr-history`: a partition's ISR and leadership changes as the controller recorded them,
 * durably, with each change (read through SkiffDescribeReplication) — one line per change, by time.
 * Kafka has no such tool: the same facts are scattered over each broker's server.log.
 */
import { Admin } from '../../client/admin.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { describeReplicationAll } from '../../client/skiff-admin.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, runTool, type ToolDef, UsageError } from './common.js';
import { kafkaTimestamp, partitionNumber, requireTopic } from './replication-tools.js';

export const ISR_HISTORY: ToolDef = {
  ...commandInfo('isr-history'),
  usage: [
    'Usage: skiff isr-history --bootstrap-server <host:port> --topic <topic> [--partition <n>] [--json]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    { name: 'topic', arg: 'topic', help: 'REQUIRED: the topic' },
    { name: 'partition', arg: 'n', help: 'only this partition' },
    { name: 'json', help: 'one JSON document instead of text lines' },
  ],
  notes: [
    'Each line: time, partition, the broker the change is about (the leader after it, or before it',
    'when none is left), its kind (create, shrink, expand, election, unclean-election, offline,',
    'reassignment), old -> new ISR, leader, leader epoch, partition epoch and the reason, which',
    'starts with the cause (lag, fetch-timeout, caught-up, controlled-shutdown, fencing,',
    'broker-restart, log-dir-failure, leader-returned, preferred-election, unclean-election, reassignment,',
    'topic-created). The controller records every change in the metadata store with the change',
    'itself, on its clock: the history survives broker and cluster restarts, bounded by',
    'skiff.isr.history.max.entries per partition and skiff.isr.history.retention.ms. Any broker',
    'hosting a partition answers for it; a broker that does not answer is named on stderr.',
  ],
};

export interface IsrHistoryLine {
  readonly timeMs: number;
  readonly broker: number;
  readonly topic: string;
  readonly partition: number;
  readonly kind: string;
  readonly leader: number;
  readonly leaderEpoch: number;
  readonly partitionEpoch: number;
  readonly oldIsr: readonly number[];
  readonly newIsr: readonly number[];
  readonly reason: string;
  readonly cause: string;
}

const isrText = (isr: readonly number[]): string => (isr.length === 0 ? 'none' : isr.join(','));

export function formatIsrHistoryLine(l: IsrHistoryLine): string {
  return [
    kafkaTimestamp(l.timeMs),
    `Partition: ${l.topic}-${l.partition}`,
    `Broker: ${l.broker}`,
    `Kind: ${l.kind}`,
    `Isr: ${isrText(l.oldIsr)} -> ${isrText(l.newIsr)}`,
    `Leader: ${l.leader < 0 ? 'none' : l.leader}`,
    `LeaderEpoch: ${l.leaderEpoch}`,
    `PartitionEpoch: ${l.partitionEpoch}`,
    `Reason: ${l.cause !== '' && !l.reason.startsWith(`${l.cause}:`) ? `${l.cause}: ${l.reason}` : l.reason}`,
  ].join('\t');
}

export function runIsrHistory(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(ISR_HISTORY, args, io, async (flags) => {
    const topic = flags.get('topic');
    if (topic === undefined || topic === '') throw new UsageError('missing required argument --topic');
    const p = flags.get('partition');
    const partition = p === undefined ? null : partitionNumber(p, 'partition');
    const client = adminClient('isr-history', flags, runtime);
    try {
      const admin = new Admin(client);
      const md = await requireTopic(admin, topic);
      if (partition !== null && !md.partitions.some((x) => x.partition === partition)) {
        throw new UsageError(`topic '${topic}' has no partition ${partition}`);
      }
      const cluster = await admin.describeCluster();
      const brokers = [...cluster.brokers.keys()].sort((a, b) => a - b);
      const hosting = new Set(
        md.partitions
          .filter((x) => partition === null || x.partition === partition)
          .flatMap((x) => x.replicas),
      );
      const down = [...hosting].filter((id) => !cluster.brokers.has(id)).sort((a, b) => a - b);
      const answers = await describeReplicationAll(
        client,
        brokers,
        new Map([[topic, partition === null ? null : [partition]]]),
      );
      // Every hosting broker reads the same durable records: one line per partition epoch.
      const byEpoch = new Map<string, IsrHistoryLine>();
      const unreachable: number[] = [];
      for (const [broker, resp] of [...answers].sort((a, b) => a[0] - b[0])) {
        if (resp instanceof Error) {
          unreachable.push(broker);
          io.err(`skiff isr-history: broker ${broker} did not answer (${resp.message.split('\n')[0]})`);
          continue;
        }
        for (const t of resp.topics) {
          for (const part of t.partitions) {
            if (part.errorCode !== 0) continue;
            for (const h of part.history) {
              byEpoch.set(`${part.partitionIndex}/${h.partitionEpoch}`, {
                timeMs: Number(h.timeMs),
                broker: h.brokerId,
                topic: t.name,
                partition: part.partitionIndex,
                kind: h.kind,
                leader: h.leaderId,
                leaderEpoch: h.leaderEpoch,
                partitionEpoch: h.partitionEpoch,
                oldIsr: h.oldIsr,
                newIsr: h.newIsr,
                reason: h.reason,
                cause: h.cause,
              });
            }
          }
        }
      }
      const lines = [...byEpoch.values()].sort(
        (a, b) => a.timeMs - b.timeMs || a.partition - b.partition || a.partitionEpoch - b.partitionEpoch,
      );
      if (flags.has('json')) {
        io.out(
          JSON.stringify({
            topic,
            partition,
            changes: lines.map((l) => ({ ...l, time: kafkaTimestamp(l.timeMs) })),
            unreachableBrokers: [...down, ...unreachable].sort((a, b) => a - b),
          }),
        );
      } else {
        for (const l of lines) io.out(formatIsrHistoryLine(l));
      }
      return 0;
    } finally {
      client.close();
    }
  });
}
