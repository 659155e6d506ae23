/**
 * `skiff replica-verification`: Kafka's kafka-replica-verification with its flags and its lines —
 * every replica of every selected partition is read with replica id -2 (Kafka's debugging
 * consumer, which the broker lets read a follower up to that follower's HW), batch by batch in
 * lockstep, comparing each batch's last offset and checksum across replicas. Unlike Kafka's tool
 * it exits by itself: once every partition has been compared up to the high watermark it had at
 * start (0 when all replicas agree, 1 naming the first divergent offset and both checksums per
 * partition), or after --max-duration-ms (3). A compacted topic's replicas are compared record by
 * record where one has compacted a batch (replica-compacted.ts).
 */

import { Admin, ConfigResourceType } from '../../client/admin.js';
import { Apis } from '../../client/apis.js';
import { ClientError } from '../../client/errors.js';
import type { KafkaClient, TopicMetadata } from '../../client/kafka-client.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import { errorByCode } from '../../protocol/generated/errors.js';
import type { FetchResponse } from '../../protocol/generated/FetchResponse.js';
import { type BatchHeader, computeCrc, LOG_OVERHEAD, readBatchHeader } from '../../protocol/records/batch.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { type Flags, openClient, readPropertiesFile, runTool, type ToolDef, UsageError } from './common.js';
import {
  COMPACTED_COMPARISON,
  type MissingRecords,
  unsettled,
  verifyCompactedRound,
} from './replica-compacted.js';
import { kafkaTimestamp } from './replication-tools.js';

export const REPLICA_VERIFICATION: ToolDef = {
  ...commandInfo('replica-verification'),
  usage: [
    'Usage: skiff replica-verification --bootstrap-server <host:port> [--topics-include <regex>]',
    '         [--fetch-size <bytes>] [--max-wait-ms <ms>] [--report-interval-ms <ms>] [--time <ts|-1|-2>]',
    '         [--max-duration-ms <ms>]',
  ],
  flags: [
    {
      name: 'bootstrap-server',
      arg: 'host:port',
      help: 'REQUIRED (or --broker-list): the broker(s) to connect to',
    },
    { name: 'broker-list', arg: 'host:port,...', help: "Kafka's name for --bootstrap-server" },
    { name: 'command-config', arg: 'file', help: 'properties file with client settings' },
    {
      name: 'topics-include',
      arg: 'regex',
      help: 'topics to verify, a regex matching the whole name (default .*)',
    },
    { name: 'topic-white-list', arg: 'regex', help: "Kafka's older name for --topics-include" },
    { name: 'fetch-size', arg: 'bytes', help: 'bytes per partition in each fetch (default 1048576)' },
    { name: 'max-wait-ms', arg: 'ms', help: 'how long each fetch may wait for data (default 1000)' },
    { name: 'report-interval-ms', arg: 'ms', help: 'how often to print the max lag line (default 30000)' },
    {
      name: 'time',
      arg: 'timestamp|-1|-2',
      help: 'where to start: -2 earliest (default), -1 latest, or the first offset at a timestamp',
    },
    {
      name: 'max-duration-ms',
      arg: 'ms',
      help: 'give up after this long, exit 3 (default: no limit)',
    },
  ],
  notes: [
    "Differences from Kafka's tool: it exits by itself once every partition has been compared up",
    'to the high watermark it had at start: 0 when all replicas agree, 1 when some diverge (one',
    'line per divergent partition naming its first divergent offset and both checksums), 3 when',
    "--max-duration-ms passed first. --time defaults to -2 (earliest), not -1: Kafka's default",
    'compares only what is written after the start, which for a tool that stops at the start HW is',
    "nothing. The checksum compared is the CRC-32C of the batch bytes each replica serves (Kafka's",
    'tool compares the CRC field stored in the batch, blind to a corrupted payload); for an intact',
    "batch the two are the same number. Why: Kafka's tool runs until it is killed and never says",
    'that the replicas agree; an answer and an exit code make the check scriptable.',
    'A topic with cleanup.policy compact is named at the start with what is compared: each replica',
    'compacts its own log, so where a replica has compacted a batch the records compare instead of',
    'the bytes — the same offset must hold the same record, and a record one replica lacks must be a',
    'tombstone or have a later record of its key on that replica (Kafka reports compaction as',
    'divergence).',
  ],
};

export interface BatchInfo {
  readonly baseOffset: bigint;
  readonly lastOffset: bigint;
  readonly nextOffset: bigint;
  readonly checksum: number;
  readonly header: BatchHeader;
  /** The whole batch, for a record-by-record comparison (compacted topics). */
  readonly bytes: Buffer;
}

/** Whole batches of a fetch answer (a trailing partial batch is left out, as Kafka's iterator does). */
export function batchesOf(records: Buffer): BatchInfo[] {
  const out: BatchInfo[] = [];
  let pos = 0;
  while (pos + LOG_OVERHEAD <= records.length) {
    const batchLength = records.readInt32BE(pos + 8);
    const size = LOG_OVERHEAD + batchLength;
    if (batchLength < 0 || pos + size > records.length) break;
    const h = readBatchHeader(records, pos);
    const lastOffset = h.baseOffset + BigInt(h.lastOffsetDelta);
    out.push({
      baseOffset: h.baseOffset,
      lastOffset,
      nextOffset: lastOffset + 1n,
      checksum: computeCrc(records, pos, size),
      header: h,
      bytes: records.subarray(pos, pos + size),
    });
    pos += size;
  }
  return out;
}

export interface ReplicaRead {
  readonly errorCode: number;
  readonly highWatermark: bigint;
  readonly batches: BatchInfo[];
  /** Bytes of records in the answer, whole batches or not. */
  readonly recordBytes: number;
}

export interface Divergence {
  /** The first offset of the first batch that differs. */
  readonly offset: bigint;
  /** Its last offset: the offset Kafka's mismatch line names. */
  readonly lastOffset: bigint;
  readonly replicaA: number;
  readonly checksumA: number | bigint;
  readonly replicaB: number;
  readonly checksumB: number | bigint;
  /** An offset mismatch (Kafka exits at once on one), not a checksum mismatch. */
  readonly offsets: boolean;
  /** What differs, where checksums do not say it (a compacted topic's records). */
  readonly detail?: string;
}

export interface PartitionState {
  readonly name: string;
  readonly tp: TopicPartition;
  readonly replicas: readonly number[];
  fetchOffset: bigint;
  readonly target: bigint;
  divergence: Divergence | null;
  stopped: boolean;
  readonly errorsSeen: Set<string>;
  /** For a compacted topic (compared record by record where compacted): what replicas still lack. */
  readonly compacted: MissingRecords | null;
}

/**
 * Kafka's ReplicaBuffer.verifyCheckSum for one partition and one round: walks the replicas'
 * batches in lockstep below each replica's HW; returns the lines to print. Advances fetchOffset.
 */
export function verifyPartition(
  p: PartitionState,
  reads: ReadonlyMap<number, ReplicaRead>,
  now: () => string,
): { lines: string[]; maxHw: bigint } {
  const lines: string[] = [];
  const ids = [...p.replicas].sort((a, b) => a - b);
  let maxHw = -1n;
  for (const id of ids) {
    const r = reads.get(id);
    if (r && r.highWatermark > maxHw) maxHw = r.highWatermark;
  }
  if (ids.some((id) => !reads.has(id) || reads.get(id)!.errorCode !== 0)) return { lines, maxHw };
  if (p.compacted !== null) {
    lines.push(...verifyCompactedRound(p, p.compacted, ids, reads, now));
    if (p.fetchOffset >= p.target) lines.push(...unsettled(p, p.compacted, now));
    return { lines, maxHw };
  }
  const cursors = new Map(ids.map((id) => [id, 0]));
  for (;;) {
    let first: { id: number; b: BatchInfo } | null = null;
    let all = true;
    for (const id of ids) {
      const r = reads.get(id)!;
      const i = cursors.get(id)!;
      const b = r.batches[i];
      if (b === undefined || b.lastOffset >= r.highWatermark) {
        all = false;
        continue;
      }
      cursors.set(id, i + 1);
      if (first === null) {
        first = { id, b };
        continue;
      }
      if (first.b.lastOffset !== b.lastOffset) {
        lines.push(
          `${now()}: partition ${p.name}: replica ${first.id}'s offset ${first.b.lastOffset} doesn't match replica ${id}'s offset ${b.lastOffset}`,
        );
        p.divergence ??= {
          offset: [first.b.baseOffset, b.baseOffset].sort((x, y) => (x < y ? -1 : 1))[0]!,
          lastOffset: [first.b.lastOffset, b.lastOffset].sort((x, y) => (x < y ? -1 : 1))[0]!,
          replicaA: first.id,
          checksumA: first.b.lastOffset,
          replicaB: id,
          checksumB: b.lastOffset,
          offsets: true,
        };
        p.stopped = true;
        return { lines, maxHw };
      }
      if (first.b.checksum !== b.checksum) {
        lines.push(
          `${now()}: partition ${p.name} has unmatched checksum at offset ${b.lastOffset}; replica ${first.id}'s checksum ${first.b.checksum}; replica ${id}'s checksum ${b.checksum}`,
        );
        p.divergence ??= {
          offset: b.baseOffset,
          lastOffset: b.lastOffset,
          replicaA: first.id,
          checksumA: first.b.checksum,
          replicaB: id,
          checksumB: b.checksum,
          offsets: false,
        };
      }
    }
    if (!all || first === null) break;
    p.fetchOffset = first.b.nextOffset;
  }
  return { lines, maxHw };
}

function topicFilter(flags: Flags): RegExp {
  const a = flags.get('topics-include');
  const b = flags.get('topic-white-list');
  if (a !== undefined && b !== undefined)
    throw new UsageError('give --topics-include or --topic-white-list, not both');
  const re = a ?? b ?? '.*';
  try {
    return new RegExp(`^(?:${re})$`);
  } catch {
    throw new UsageError(`${re} is an invalid regex`);
  }
}

function positive(flags: Flags, name: string, dflt: number, min = 0): number {
  const v = flags.int(name);
  if (v === undefined) return dflt;
  if (v < min) throw new UsageError(`--${name} must be ≥ ${min}, got ${v}`);
  return v;
}

async function fetchFrom(
  client: KafkaClient,
  broker: number,
  parts: readonly PartitionState[],
  fetchSize: number,
  maxWaitMs: number,
): Promise<FetchResponse> {
  const byTopic = new Map<string, PartitionState[]>();
  for (const p of parts) byTopic.set(p.tp.topic, [...(byTopic.get(p.tp.topic) ?? []), p]);
  return client.send({ kind: 'node', id: broker }, Apis.Fetch, (v) => ({
    clusterId: null,
    // Kafka's FetchRequest.DEBUGGING_CONSUMER_ID: may read followers, up to their HW.
    replicaId: v <= 14 ? -2 : -1,
    replicaState: { replicaId: v <= 14 ? -1 : -2, replicaEpoch: -1n },
    maxWaitMs,
    minBytes: 1,
    maxBytes: Math.max(fetchSize, 52_428_800),
    isolationLevel: 0,
    sessionId: 0,
    sessionEpoch: -1,
    topics: [...byTopic].map(([topic, ps]) => ({
      topic,
      topicId: '',
      partitions: ps.map((p) => ({
        partition: p.tp.partition,
        currentLeaderEpoch: -1,
        fetchOffset: p.fetchOffset,
        lastFetchedEpoch: -1,
        logStartOffset: -1n,
        partitionMaxBytes: fetchSize,
        replicaDirectoryId: '',
      })),
    })),
    forgottenTopicsData: [],
    rackId: '',
  }));
}

/**
 * One round of reads: every pending partition from each of its replicas (one Fetch per broker).
 * Errors are said once per replica and error (an unreachable broker once per partition group);
 * `failures` counts the brokers that did not answer.
 */
async function readRound(
  client: KafkaClient,
  round: readonly PartitionState[],
  fetchSize: number,
  maxWaitMs: number,
  io: CliIo,
): Promise<{ reads: Map<string, Map<number, ReplicaRead>>; failures: number }> {
  const byBroker = new Map<number, PartitionState[]>();
  for (const p of round) for (const r of p.replicas) byBroker.set(r, [...(byBroker.get(r) ?? []), p]);
  const reads = new Map<string, Map<number, ReplicaRead>>();
  for (const p of round) reads.set(p.name, new Map());
  let failures = 0;
  await Promise.all(
    [...byBroker].map(async ([broker, ps]) => {
      try {
        const resp = await fetchFrom(client, broker, ps, fetchSize, maxWaitMs);
        if (resp.errorCode !== 0)
          throw new ClientError(errorByCode(resp.errorCode)?.name ?? `${resp.errorCode}`);
        for (const t of resp.responses) {
          for (const d of t.partitions) {
            const name = topicPartitionKey(t.topic, d.partitionIndex);
            const m = reads.get(name);
            if (!m) continue;
            m.set(broker, {
              errorCode: d.errorCode,
              highWatermark: d.highWatermark,
              batches: d.errorCode === 0 && d.records ? batchesOf(d.records) : [],
              recordBytes: d.records?.length ?? 0,
            });
            if (d.errorCode !== 0) {
              const p = round.find((x) => x.name === name)!;
              const what = `${broker}:${d.errorCode}`;
              if (!p.errorsSeen.has(what)) {
                p.errorsSeen.add(what);
                io.err(
                  `skiff replica-verification: replica ${broker} of ${name} answered ${errorByCode(d.errorCode)?.name ?? d.errorCode} at offset ${p.fetchOffset}`,
                );
              }
            }
          }
        }
      } catch (e) {
        failures++;
        const p = ps[0]!;
        const what = `${broker}:unreachable`;
        if (!p.errorsSeen.has(what)) {
          p.errorsSeen.add(what);
          io.err(
            `skiff replica-verification: broker ${broker} did not answer (${(e as Error).message.split('\n')[0]}); retrying`,
          );
        }
      }
    }),
  );
  return { reads, failures };
}

/**
 * The closing lines and exit status: 1 when some partition diverges (its first divergent batch
 * and both checksums named), 3 when --max-duration-ms (`stoppedAfterMs`, else null) ended the
 * comparison first (the partitions left named), 0 when every partition agrees.
 */
export function verdict(
  parts: readonly PartitionState[],
  stoppedAfterMs: number | null,
  now: () => string,
): { lines: string[]; code: number } {
  const lines: string[] = [];
  const divergent = parts.filter((p) => p.divergence !== null);
  for (const p of divergent) {
    const d = p.divergence!;
    lines.push(
      d.detail !== undefined
        ? `${now()}: partition ${p.name} diverges first at offset ${d.offset}: ${d.detail}`
        : d.offsets
          ? `${now()}: partition ${p.name} diverges first at offset ${d.offset}: replica ${d.replicaA}'s batch ends at offset ${d.checksumA}; replica ${d.replicaB}'s at offset ${d.checksumB}`
          : `${now()}: partition ${p.name} diverges first at offset ${d.offset} (the batch ${d.offset}..${d.lastOffset}); replica ${d.replicaA}'s checksum ${d.checksumA}; replica ${d.replicaB}'s checksum ${d.checksumB}`,
    );
  }
  if (stoppedAfterMs !== null) {
    const left = parts.filter((p) => p.divergence === null && p.fetchOffset < p.target);
    lines.push(
      `${now()}: verification stopped after ${stoppedAfterMs} ms (--max-duration-ms): ${left.length} of ${parts.length} partitions not compared up to their high watermark at start: ${left
        .map((p) => `${p.name} at offset ${p.fetchOffset} of ${p.target}`)
        .join(', ')}`,
    );
  }
  if (divergent.length > 0) {
    lines.push(
      `${now()}: verification completed: ${divergent.length} of ${parts.length} partitions have replicas that diverge`,
    );
    return { lines, code: 1 };
  }
  if (stoppedAfterMs !== null) return { lines, code: 3 };
  lines.push(
    `${now()}: verification completed: the replicas of all ${parts.length} partitions agree up to their high watermark at start`,
  );
  return { lines, code: 0 };
}

/**
 * Each partition's comparison state at the start: from its offset at --time (its target when
 * there is none: nothing to compare) up to the HW at start (Kafka's LEO of ListOffsets -1).
 */
function startStates(
  tps: readonly TopicPartition[],
  replicasOf: ReadonlyMap<string, readonly number[]>,
  starts: ReadonlyMap<string, bigint>,
  targets: ReadonlyMap<string, bigint>,
  compacted: ReadonlySet<string>,
): PartitionState[] {
  return tps.map((tp) => {
    const name = topicPartitionKey(tp.topic, tp.partition);
    const start = starts.get(name)!;
    const target = targets.get(name)!;
    return {
      name,
      tp,
      replicas: replicasOf.get(name) ?? [],
      // No offset at that timestamp (-1): nothing to compare.
      fetchOffset: start < 0n ? target : start,
      target,
      divergence: null,
      stopped: false,
      errorsSeen: new Set(),
      compacted: compacted.has(tp.topic) ? new Map() : null,
    };
  });
}

/** Kafka's replica-verification flags, checked: one line and exit 2 for a bad one. */
function verificationOptions(flags: Flags) {
  const bs = flags.get('bootstrap-server');
  const bl = flags.get('broker-list');
  if (bs !== undefined && bl !== undefined)
    throw new UsageError('give --bootstrap-server or --broker-list, not both');
  const bootstrap = bs ?? bl;
  if (bootstrap === undefined)
    throw new UsageError('missing required argument --bootstrap-server (or --broker-list)');
  const include = topicFilter(flags);
  const fetchSize = positive(flags, 'fetch-size', 1_048_576, 1);
  const maxWaitMs = positive(flags, 'max-wait-ms', 1000);
  const reportIntervalMs = positive(flags, 'report-interval-ms', 30_000);
  const maxDurationMs = flags.int('max-duration-ms');
  if (maxDurationMs !== undefined && maxDurationMs <= 0)
    throw new UsageError(`--max-duration-ms must be > 0, got ${maxDurationMs}`);
  const time = flags.int('time') ?? -2;
  if (time < -2) throw new UsageError(`--time expects a timestamp, -1 or -2, got ${time}`);
  return { bootstrap, include, fetchSize, maxWaitMs, reportIntervalMs, maxDurationMs, time };
}

export function runReplicaVerification(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(REPLICA_VERIFICATION, args, io, async (flags) => {
    const { bootstrap, include, fetchSize, maxWaitMs, reportIntervalMs, maxDurationMs, time } =
      verificationOptions(flags);
    const cc = flags.get('command-config');
    const client = openClient(
      'replica-verification',
      bootstrap,
      runtime,
      cc === undefined ? new Map() : readPropertiesFile(cc),
    );
    const clock = runtime.clock;
    const now = (): string => kafkaTimestamp(clock.nowMs());
    try {
      const admin = new Admin(client);
      const names = (await admin.listTopics(true)).filter((t) => include.test(t)).sort();
      const described = await admin.describeTopics(names);
      const topics = [...described.values()].filter((t): t is TopicMetadata => !(t instanceof Error));
      if (topics.length === 0) {
        throw new ClientError(
          'No topics found. --topics-include if specified, is either filtering out all topics or there is no topic.',
        );
      }
      const tps: TopicPartition[] = topics.flatMap((t) =>
        t.partitions.map((p) => ({ topic: t.name, partition: p.partition })),
      );
      const replicasOf = new Map<string, readonly number[]>(
        topics.flatMap((t) =>
          t.partitions.map((p) => [topicPartitionKey(t.name, p.partition), p.replicas] as const),
        ),
      );
      const offsetsAt = async (ts: bigint) => {
        const r = await admin.listOffsets(tps, ts);
        const out = new Map<string, bigint>();
        for (const tp of tps) {
          const key = topicPartitionKey(tp.topic, tp.partition);
          const v = r.get(key);
          if (!v?.ok) {
            throw new ClientError(
              `cannot list offsets of ${key}: ${v && !v.ok ? v.error.message : 'no answer from its leader'}`,
            );
          }
          out.set(key, v.value);
        }
        return out;
      };
      const targets = await offsetsAt(-1n);
      const starts = time === -1 ? targets : await offsetsAt(BigInt(time));
      const compacted = new Set<string>();
      for (const t of topics) {
        const configs = await admin.describeConfigs({ type: ConfigResourceType.topic, name: t.name }, false);
        const policy = configs.find((c) => c.name === 'cleanup.policy')?.value ?? '';
        if (policy.split(',').some((v) => v.trim() === 'compact')) compacted.add(t.name);
      }
      const parts = startStates(tps, replicasOf, starts, targets, compacted);
      const startedMs = clock.nowMs();
      io.out(`${now()}: verification process is started`);
      if (compacted.size > 0) {
        io.out(
          `${now()}: compacted topics, each replica compacting its own log: ${[...compacted].join(', ')}; ${COMPACTED_COMPARISON}`,
        );
      }
      let lastReportMs = startedMs;
      let maxLag = -1n;
      let maxLagPartition = '';
      let offsetWithMaxLag = -1n;
      const pending = (): PartitionState[] => parts.filter((p) => !p.stopped && p.fetchOffset < p.target);
      let timedOut = false;
      while (pending().length > 0) {
        if (maxDurationMs !== undefined && clock.nowMs() - startedMs >= maxDurationMs) {
          timedOut = true;
          break;
        }
        const round = pending();
        const byBroker = new Map<number, PartitionState[]>();
        for (const p of round) for (const r of p.replicas) byBroker.set(r, [...(byBroker.get(r) ?? []), p]);
        const { reads, failures } = await readRound(client, round, fetchSize, maxWaitMs, io);
        maxLag = -1n;
        let progressed = false;
        for (const p of round) {
          const before = p.fetchOffset;
          const { lines, maxHw } = verifyPartition(p, reads.get(p.name)!, now);
          for (const l of lines) io.out(l);
          if (p.fetchOffset !== before) progressed = true;
          if (maxHw - p.fetchOffset > maxLag) {
            maxLag = maxHw - p.fetchOffset;
            maxLagPartition = p.name;
            offsetWithMaxLag = p.fetchOffset;
          }
        }
        if (clock.nowMs() - lastReportMs > reportIntervalMs) {
          io.out(
            `${now()}: max lag is ${maxLag} for partition ${maxLagPartition} at offset ${offsetWithMaxLag} among ${parts.length} partitions`,
          );
          lastReportMs = clock.nowMs();
        }
        // A round without progress (a replica behind its HW, a broker down): do not spin.
        if (!progressed && failures > 0) await runtime.sleep(Math.max(100, Math.min(maxWaitMs, 1000)));
        else if (!progressed) await runtime.sleep(50);
      }
      if (maxLagPartition === '' && parts.length > 0) {
        maxLag = 0n;
        maxLagPartition = parts[0]!.name;
        offsetWithMaxLag = parts[0]!.fetchOffset;
      }
      io.out(
        `${now()}: max lag is ${maxLag} for partition ${maxLagPartition} at offset ${offsetWithMaxLag} among ${parts.length} partitions`,
      );
      const { lines, code } = verdict(parts, timedOut ? (maxDurationMs ?? null) : null, now);
      for (const l of lines) io.out(l);
      return code;
    } finally {
      client.close();
    }
  });
}
