/**
 * `skiff reassign-partitions`: Kafka's kafka-reassign-partitions.sh — --generate a plan, --execute
 * it (optionally throttled), --verify it (clearing the throttles once nothing moves), --cancel it,
 * --list what moves. Its JSON files are Kafka's: `{"version":1,"partitions":[{"topic","partition",
 * "replicas","log_dirs"}]}` and, for --generate, `{"version":1,"topics":[{"topic":"t"}]}`.
 */

import * as fs from 'node:fs';
import { Admin, AlterOp, ConfigResourceType } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import { assignReplicas } from '../../controller/replica-assignment.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { CliIo } from '../cli.js';
import { ADMIN_FLAGS, adminClient, type Flags, runTool, type ToolDef, UsageError } from './common.js';
import {
  checkExecutablePlan,
  compareTp,
  duplicates,
  formatReassignmentJson,
  type PartitionMove,
  type PlannedPartition,
  parseReassignmentJson,
  parseTopicsJson,
  plural,
  proposedMoveMap,
  type ReplicaMove,
  replicaMovesOf,
  throttledReplicaLists,
  tpName,
} from './reassign-plan.js';

export const REASSIGN_PARTITIONS: ToolDef = {
  name: 'reassign-partitions',
  summary: "move partition replicas between brokers and log dirs (Kafka's kafka-reassign-partitions)",
  usage: [
    'Usage: skiff reassign-partitions --bootstrap-server <host:port> --generate|--execute|--verify|--cancel|--list [options]',
  ],
  flags: [
    ...ADMIN_FLAGS,
    {
      name: 'generate',
      help: 'propose an assignment of the topics in --topics-to-move-json-file to --broker-list',
    },
    { name: 'execute', help: 'start the reassignment in --reassignment-json-file' },
    { name: 'verify', help: 'report the status of the reassignment in --reassignment-json-file' },
    { name: 'cancel', help: 'cancel the reassignment in --reassignment-json-file' },
    { name: 'list', help: 'list the partition reassignments in progress' },
    { name: 'reassignment-json-file', arg: 'file', help: 'the partition reassignment JSON' },
    {
      name: 'topics-to-move-json-file',
      arg: 'file',
      help: 'with --generate: {"topics":[{"topic":"t"}],"version":1}',
    },
    { name: 'broker-list', arg: '1,2,3', help: 'with --generate: the brokers to assign replicas to' },
    {
      name: 'throttle',
      arg: 'bytes/s',
      help: 'with --execute: throttle the movement between brokers to this rate',
    },
    {
      name: 'replica-alter-log-dirs-throttle',
      arg: 'bytes/s',
      help: 'with --execute: throttle moves between log dirs of one broker to this rate',
    },
    {
      name: 'preserve-throttles',
      help: 'with --verify/--cancel: leave the throttles in place',
    },
    {
      name: 'additional',
      help: 'with --execute: start even though other reassignments are in progress (or change the throttle)',
    },
    {
      name: 'timeout',
      arg: 'ms',
      help: 'with --execute/--cancel: how long to wait for log dir moves to start (default 10000)',
    },
    { name: 'disable-rack-aware', help: 'with --generate: ignore racks' },
  ],
  notes: [
    "Differences from Kafka: --cancel also cancels moves that only add replicas (Kafka's tool skips",
    'those); a multi-line Kafka error is printed as one line, partitions separated by "; ".',
  ],
};

const ACTIONS = ['generate', 'execute', 'verify', 'cancel', 'list'] as const;
type Action = (typeof ACTIONS)[number];

const REQUIRED: Record<Action, readonly string[]> = {
  generate: ['topics-to-move-json-file', 'broker-list'],
  execute: ['reassignment-json-file'],
  verify: ['reassignment-json-file'],
  cancel: ['reassignment-json-file'],
  list: [],
};

const PERMITTED: Record<Action, readonly string[]> = {
  generate: ['disable-rack-aware'],
  execute: ['additional', 'throttle', 'replica-alter-log-dirs-throttle', 'timeout'],
  verify: ['preserve-throttles'],
  cancel: ['preserve-throttles', 'timeout'],
  list: [],
};

const BROKER_THROTTLES = [
  'leader.replication.throttled.rate',
  'follower.replication.throttled.rate',
  'replica.alter.log.dirs.io.max.bytes.per.second',
] as const;
const TOPIC_THROTTLES = ['leader.replication.throttled.replicas', 'follower.replication.throttled.replicas'];

export function runReassignPartitions(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(REASSIGN_PARTITIONS, args, io, async (flags) => {
    const action = checkFlags(flags);
    const client = adminClient('reassign-partitions', flags, runtime);
    try {
      const admin = new Admin(client);
      const tool = new ReassignTool(admin, io, runtime);
      switch (action) {
        case 'generate':
          return await tool.generate(
            readFile(flags.require('topics-to-move-json-file')),
            flags.require('broker-list'),
            !flags.has('disable-rack-aware'),
          );
        case 'execute':
          return await tool.execute(readFile(flags.require('reassignment-json-file')), {
            additional: flags.has('additional'),
            throttle: longFlag(flags, 'throttle'),
            logDirThrottle: longFlag(flags, 'replica-alter-log-dirs-throttle'),
            timeoutMs: longFlag(flags, 'timeout') ?? 10_000,
          });
        case 'verify':
          return await tool.verify(
            readFile(flags.require('reassignment-json-file')),
            flags.has('preserve-throttles'),
          );
        case 'cancel':
          return await tool.cancel(
            readFile(flags.require('reassignment-json-file')),
            flags.has('preserve-throttles'),
            longFlag(flags, 'timeout') ?? 10_000,
          );
        case 'list':
          return await tool.list();
      }
    } finally {
      client.close();
    }
  });
}

function checkFlags(flags: Flags): Action {
  const actions = ACTIONS.filter((a) => flags.has(a));
  if (actions.length !== 1) {
    throw new UsageError(
      `Command must include exactly one action: ${ACTIONS.map((a) => `--${a}`).join(', ')}`,
    );
  }
  const action = actions[0]!;
  if (!flags.has('bootstrap-server')) throw new UsageError('Please specify --bootstrap-server');
  for (const r of REQUIRED[action]) {
    if (!flags.has(r)) throw new UsageError(`Missing required argument "[${r}]"`);
  }
  const allowed = new Set<string>([
    action,
    'bootstrap-server',
    'command-config',
    ...REQUIRED[action],
    ...PERMITTED[action],
  ]);
  for (const f of REASSIGN_PARTITIONS.flags) {
    if (flags.has(f.name) && !allowed.has(f.name)) {
      throw new UsageError(`Option "[${f.name}]" can't be used with action "[${action}]"`);
    }
  }
  return action;
}

function longFlag(flags: Flags, name: string): number | undefined {
  const v = flags.get(name);
  if (v === undefined) return undefined;
  if (!/^\d+$/.test(v.trim())) throw new UsageError(`--${name} expects a non-negative integer, got '${v}'`);
  return Number(v);
}

function readFile(path: string): string {
  try {
    return fs.readFileSync(path, 'utf8');
  } catch (e) {
    throw new ClientError(
      `cannot read ${path} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
    );
  }
}

interface LogDirState {
  readonly current: string | null;
  readonly future: string | null;
}

class ReassignTool {
  constructor(
    private readonly admin: Admin,
    private readonly io: CliIo,
    private readonly runtime: ClientRuntime,
  ) {}

  async generate(topicsJson: string, brokerList: string, rackAware: boolean): Promise<number> {
    const brokers = brokerList.split(',').map((b) => {
      if (!/^\s*-?\d+\s*$/.test(b)) throw new UsageError(`invalid broker id '${b}' in --broker-list`);
      return Number(b);
    });
    const dupBrokers = duplicates(brokers);
    if (dupBrokers.length > 0)
      throw new ClientError(`Broker list contains duplicate entries: ${dupBrokers.join(', ')}`);
    const topics = parseTopicsJson(topicsJson);
    const dupTopics = duplicates(topics);
    if (dupTopics.length > 0) {
      throw new ClientError(`List of topics to reassign contains duplicate entries: ${dupTopics.join(', ')}`);
    }
    const current = await this.currentAssignment(topics);
    const cluster = await this.admin.describeCluster();
    // Kafka's getBrokerMetadata: brokers of the list that are registered, with their racks unless
    // --disable-rack-aware; racks on some brokers only is an error.
    const live = brokers
      .filter((b) => cluster.brokers.has(b))
      .map((id) => ({ id, rack: rackAware ? (cluster.racks?.get(id) ?? null) : null }));
    const rackless = live.filter((b) => b.rack === null).length;
    if (rackAware && rackless !== 0 && rackless !== live.length) {
      throw new ClientError(
        'Not all brokers have rack information. Add --disable-rack-aware in command line to make replica assignment without rack information.',
      );
    }
    const proposed = new Map<string, { topic: string; partition: number; replicas: number[] }>();
    for (const topic of [...new Set(topics)]) {
      const parts = [...current.values()].filter((p) => p.topic === topic);
      const rf = parts[0]?.replicas.length ?? 0;
      if (rf > live.length) {
        throw new ClientError(`Replication factor: ${rf} larger than available brokers: ${live.length}.`);
      }
      const assigned = assignReplicas(live, parts.length, rf, (n) => Math.floor(Math.random() * n));
      assigned.forEach((replicas, partition) => {
        proposed.set(topicPartitionKey(topic, partition), { topic, partition, replicas });
      });
    }
    this.io.out('Current partition replica assignment');
    this.io.out(formatReassignmentJson(current));
    this.io.out('');
    this.io.out('Proposed partition reassignment configuration');
    this.io.out(formatReassignmentJson(proposed));
    return 0;
  }

  /** Replicas of every partition of `topics`; an unknown topic is an error. */
  private async currentAssignment(
    topics: readonly string[],
  ): Promise<Map<string, { topic: string; partition: number; replicas: readonly number[] }>> {
    const described = await this.admin.describeTopics([...new Set(topics)]);
    const out = new Map<string, { topic: string; partition: number; replicas: readonly number[] }>();
    for (const [name, t] of described) {
      if (t instanceof Error) {
        if (t.code === ErrorCode.UNKNOWN_TOPIC_OR_PARTITION)
          throw new ClientError(`Topic ${name} not found.`);
        throw t;
      }
      for (const p of t.partitions)
        out.set(topicPartitionKey(name, p.partition), {
          topic: name,
          partition: p.partition,
          replicas: p.replicas,
        });
    }
    return out;
  }

  async execute(
    json: string,
    opts: { additional: boolean; throttle?: number; logDirThrottle?: number; timeoutMs: number },
  ): Promise<number> {
    const plan = parseReassignmentJson(json);
    checkExecutablePlan(plan);
    const moves = replicaMovesOf(plan);
    const inProgress = await this.admin.listPartitionReassignments(null);
    if (!opts.additional && inProgress.size > 0) {
      throw new ClientError(
        'Cannot execute because there is an existing partition assignment.  Use --additional to override this and create a new partition assignment in addition to the existing one. The --additional flag can also be used to change the throttle by resubmitting the current reassignment.',
      );
    }
    const cluster = await this.admin.describeCluster();
    const unknown = plan.flatMap((p) => p.replicas).find((b) => !cluster.brokers.has(b));
    if (unknown !== undefined) throw new ClientError(`Unknown broker id ${unknown}`);
    const all = await this.currentAssignment(plan.map((p) => p.topic));
    const missing = plan.filter((p) => !all.has(tpName(p)));
    if (missing.length > 0)
      throw new ClientError(`Unable to find partition: ${missing.map(tpName).join(', ')}`);
    const current = new Map(plan.map((p) => [tpName(p), all.get(tpName(p))!]));
    this.io.out('Current partition replica assignment');
    this.io.out('');
    this.io.out(formatReassignmentJson(current));
    this.io.out('');
    this.io.out('Save this to use as the --reassignment-json-file option during rollback');
    if (opts.throttle !== undefined || opts.logDirThrottle !== undefined) {
      this.io.out(
        'Warning: You must run --verify periodically, until the reassignment completes, to ensure the throttle is removed.',
      );
      if (opts.throttle !== undefined) {
        const replicasNow = new Map([...current].map(([k, v]) => [k, v.replicas]));
        await this.setInterBrokerThrottle(proposedMoveMap(inProgress, plan, replicasNow), opts.throttle);
      }
      if (opts.logDirThrottle !== undefined) {
        const brokers = [...new Set(moves.map((m) => m.broker))].sort((a, b) => a - b);
        await this.setBrokerConfigs(brokers, [
          ['replica.alter.log.dirs.io.max.bytes.per.second', String(opts.logDirThrottle)],
        ]);
        this.io.out(`The replica-alter-dir throttle limit was set to ${opts.logDirThrottle} B/s`);
      }
    }
    const results = await this.admin.alterPartitionReassignments(
      plan.map((p) => ({ tp: p, replicas: p.replicas })),
    );
    const errors = plan
      .filter((p) => results.get(tpName(p)) !== null)
      .sort(compareTp)
      .map((p) => `${tpName(p)}: ${results.get(tpName(p))?.message ?? 'no result'}`);
    if (errors.length > 0) throw new ClientError(`Error reassigning partition(s): ${errors.join('; ')}`);
    this.io.out(
      `Successfully started partition reassignment${plural(plan.length)} for ${[...plan]
        .sort(compareTp)
        .map(tpName)
        .join(',')}`,
    );
    if (moves.length > 0) await this.executeMoves(moves, opts.timeoutMs);
    return 0;
  }

  private async setInterBrokerThrottle(
    moveMap: Map<string, Map<number, PartitionMove>>,
    rate: number,
  ): Promise<void> {
    const { leader, follower } = throttledReplicaLists(moveMap);
    for (const topic of [...moveMap.keys()].sort()) {
      await this.admin.incrementalAlterConfigs({ type: ConfigResourceType.topic, name: topic }, [
        { name: 'leader.replication.throttled.replicas', op: AlterOp.set, value: leader.get(topic)! },
        { name: 'follower.replication.throttled.replicas', op: AlterOp.set, value: follower.get(topic)! },
      ]);
    }
    const brokers = new Set<number>();
    for (const parts of moveMap.values()) {
      for (const m of parts.values()) for (const b of [...m.sources, ...m.destinations]) brokers.add(b);
    }
    await this.setBrokerConfigs(
      [...brokers].sort((a, b) => a - b),
      [
        ['leader.replication.throttled.rate', String(rate)],
        ['follower.replication.throttled.rate', String(rate)],
      ],
    );
    this.io.out(`The inter-broker throttle limit was set to ${rate} B/s`);
  }

  private async setBrokerConfigs(brokers: readonly number[], values: readonly [string, string][]) {
    for (const b of brokers) {
      await this.admin.incrementalAlterConfigs(
        { type: ConfigResourceType.broker, name: String(b) },
        values.map(([name, value]) => ({ name, op: AlterOp.set, value })),
      );
    }
  }

  /** Kafka's executeMoves: AlterReplicaLogDirs until every broker accepted (REPLICA_NOT_AVAILABLE: not yet). */
  private async executeMoves(moves: readonly ReplicaMove[], timeoutMs: number): Promise<void> {
    const startMs = this.runtime.clock.nowMs();
    let pending = [...moves];
    for (;;) {
      const results = await this.admin.alterReplicaLogDirs(
        pending.map((m) => ({ broker: m.broker, tp: m, logDir: m.logDir })),
      );
      const started: ReplicaMove[] = [];
      for (const m of pending) {
        const key = `${m.broker}-${m.topic}-${m.partition}`;
        const err = results.get(key);
        if (err === null) started.push(m);
        else if (err !== undefined && err.code !== ErrorCode.REPLICA_NOT_AVAILABLE) {
          throw new ClientError(
            `Failed to alter dir for ${m.topic}-${m.partition}-${m.broker}: ${err.message}`,
          );
        }
      }
      for (const m of [...started].sort((a, b) => a.broker - b.broker || compareTp(a, b))) {
        this.io.out(
          `Successfully started moving log directory to ${m.logDir} for replica ${m.topic}-${m.partition} with broker ${m.broker} `,
        );
      }
      pending = pending.filter((m) => !started.includes(m));
      if (pending.length === 0) return;
      if (this.runtime.clock.nowMs() >= startMs + timeoutMs) {
        throw new ClientError(
          `Timed out before log directory move${plural(pending.length)} could be started for: ${pending
            .map((m) => `${m.topic}-${m.partition}-${m.broker}`)
            .join(',')}`,
        );
      }
      await this.runtime.sleep(100);
    }
  }

  async verify(json: string, preserveThrottles: boolean): Promise<number> {
    const plan = parseReassignmentJson(json);
    const inProgress = await this.admin.listPartitionReassignments(null);
    const notMoving = plan.filter((p) => !inProgress.has(tpName(p)));
    const replicasNow = new Map<string, readonly number[]>();
    if (notMoving.length > 0) {
      const described = await this.admin.describeTopics([...new Set(notMoving.map((p) => p.topic))]);
      for (const [name, t] of described) {
        if (t instanceof Error) {
          if (t.code !== ErrorCode.UNKNOWN_TOPIC_OR_PARTITION) throw t;
          continue;
        }
        for (const p of t.partitions) replicasNow.set(topicPartitionKey(name, p.partition), p.replicas);
      }
    }
    this.io.out('Status of partition reassignment:');
    for (const p of [...plan].sort(compareTp)) {
      if (inProgress.has(tpName(p))) {
        this.io.out(`Reassignment of partition ${tpName(p)} is still in progress.`);
        continue;
      }
      const now = replicasNow.get(tpName(p)) ?? [];
      if (now.length === p.replicas.length && now.every((r, i) => p.replicas[i] === r)) {
        this.io.out(`Reassignment of partition ${tpName(p)} is completed.`);
      } else {
        this.io.out(
          `There is no active reassignment of partition ${tpName(p)}, but replica set is ${now.join(',')} rather than ${p.replicas.join(',')}.`,
        );
      }
    }
    const moves = replicaMovesOf(plan);
    const states = await this.logDirStates(moves);
    let movesOngoing = false;
    const lines: string[] = [];
    for (const m of [...moves].sort((a, b) => a.broker - b.broker || compareTp(a, b))) {
      const s = states.get(`${m.broker}-${m.topic}-${m.partition}`);
      const replica = `${m.topic}-${m.partition}-${m.broker}`;
      if (s === undefined) {
        movesOngoing = true;
        lines.push(`Partition ${tpName(m)} cannot be found in any live log directory on broker ${m.broker}.`);
      } else if (s.future !== null) {
        movesOngoing = true;
        lines.push(
          s.future === m.logDir
            ? `Reassignment of replica ${replica} is still in progress.`
            : `Partition ${tpName(m)} on broker ${m.broker} is being moved to log dir ${s.future} instead of ${m.logDir}.`,
        );
      } else if (s.current === m.logDir) {
        lines.push(`Reassignment of replica ${replica} completed successfully.`);
      } else {
        movesOngoing = true;
        lines.push(
          `Partition ${tpName(m)} on broker ${m.broker} is not being moved from log dir ${s.current} to ${m.logDir}.`,
        );
      }
    }
    this.io.out(lines.join('\n'));
    if (inProgress.size === 0 && !movesOngoing && !preserveThrottles) await this.clearAllThrottles(plan);
    return 0;
  }

  /** Where each named replica lives now and whether a future log is being built for it. */
  private async logDirStates(moves: readonly ReplicaMove[]): Promise<Map<string, LogDirState>> {
    const out = new Map<string, LogDirState>();
    if (moves.length === 0) return out;
    const brokers = [...new Set(moves.map((m) => m.broker))];
    const topics = [...new Set(moves.map((m) => m.topic))];
    const byBroker = await this.admin.describeLogDirs(brokers, topics);
    for (const [broker, dirs] of byBroker) {
      for (const d of dirs) {
        if (d.errorCode !== 0) continue;
        for (const t of d.topics) {
          for (const p of t.partitions) {
            const key = `${broker}-${t.name}-${p.partitionIndex}`;
            const s = out.get(key) ?? { current: null, future: null };
            out.set(key, p.isFutureKey ? { ...s, future: d.logDir } : { ...s, current: d.logDir });
          }
        }
      }
    }
    return out;
  }

  /** Kafka's clearAllThrottles: every live broker and every broker of the plan; every topic of the plan. */
  private async clearAllThrottles(plan: readonly PlannedPartition[]): Promise<void> {
    const cluster = await this.admin.describeCluster();
    const brokers = new Set<number>(cluster.brokers.keys());
    for (const p of plan) for (const r of p.replicas) brokers.add(r);
    const brokerList = [...brokers].sort((a, b) => a - b);
    this.io.out(
      `Clearing broker-level throttles on broker${plural(brokerList.length)} ${brokerList.join(',')}`,
    );
    for (const b of brokerList) {
      // A broker in the plan that is not registered cannot be altered; Kafka fails the same way.
      await this.admin.incrementalAlterConfigs(
        { type: ConfigResourceType.broker, name: String(b) },
        BROKER_THROTTLES.map((name) => ({ name, op: AlterOp.delete, value: null })),
      );
    }
    const topics = [...new Set(plan.map((p) => p.topic))].sort();
    this.io.out(`Clearing topic-level throttles on topic${plural(topics.length)} ${topics.join(',')}`);
    for (const t of topics) {
      await this.admin.incrementalAlterConfigs(
        { type: ConfigResourceType.topic, name: t },
        TOPIC_THROTTLES.map((name) => ({ name, op: AlterOp.delete, value: null })),
      );
    }
  }

  async cancel(json: string, preserveThrottles: boolean, timeoutMs: number): Promise<number> {
    const plan = parseReassignmentJson(json);
    const inProgress = await this.admin.listPartitionReassignments(plan);
    // Kafka's tool skips moves that only add replicas here (a bug: they could never be cancelled).
    const cancelling = plan.filter((p) => inProgress.has(tpName(p))).sort(compareTp);
    if (cancelling.length > 0) {
      const results = await this.admin.alterPartitionReassignments(
        cancelling.map((p) => ({ tp: p, replicas: null })),
      );
      const errors = cancelling
        .filter((p) => results.get(tpName(p)) !== null)
        .map((p) => `${tpName(p)}: ${results.get(tpName(p))?.message ?? 'no result'}`);
      if (errors.length > 0) {
        throw new ClientError(
          `Error cancelling partition reassignment${plural(errors.length)} for: ${errors.join('; ')}`,
        );
      }
      this.io.out(
        `Successfully cancelled partition reassignment${plural(cancelling.length)} for: ${cancelling
          .map(tpName)
          .join(',')}`,
      );
    } else {
      this.io.out('None of the specified partition reassignments are active.');
    }
    // A log dir move in progress is cancelled by moving the replica back to where it is now.
    const states = await this.logDirStates(replicaMovesOf(plan));
    const back: ReplicaMove[] = [];
    for (const m of replicaMovesOf(plan)) {
      const s = states.get(`${m.broker}-${m.topic}-${m.partition}`);
      if (s?.future != null && s.current !== null) back.push({ ...m, logDir: s.current });
    }
    if (back.length === 0) this.io.out('None of the specified partition moves are active.');
    else await this.executeMoves(back, timeoutMs);
    if (!preserveThrottles) await this.clearAllThrottles(plan);
    return 0;
  }

  async list(): Promise<number> {
    const current = await this.admin.listPartitionReassignments(null);
    if (current.size === 0) {
      this.io.out('No partition reassignments found.');
      return 0;
    }
    this.io.out('Current partition reassignments:');
    for (const r of [...current.values()].sort(compareTp)) {
      const adding = r.addingReplicas.length > 0 ? ` adding: ${r.addingReplicas.join(',')}.` : '';
      const removing = r.removingReplicas.length > 0 ? ` removing: ${r.removingReplicas.join(',')}.` : '';
      this.io.out(`${tpName(r)}: replicas: ${r.replicas.join(',')}.${adding}${removing}`);
    }
    return 0;
  }
}
