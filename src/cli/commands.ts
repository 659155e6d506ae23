/**
 * The `skiff` subcommands: each one's name and one-line summary, which `skiff --help` lists and
 * the tool's ToolDef takes (`...commandInfo('topics')`), and how its code is loaded. This module
 * imports no tool: a subcommand's module, with the client, the broker, etcd3 or the protocol codecs
 * it pulls in, is imported only when that subcommand runs, so `skiff --help` and `skiff --version`
 * cost little more than starting Node (issue 17).
 */
import type { CliIo } from './cli.js';

export type CommandRun = (args: string[], io: CliIo) => Promise<number>;

export interface CommandInfo {
  readonly name: string;
  readonly summary: string;
}

interface CommandEntry {
  readonly summary: string;
  load(): Promise<CommandRun>;
}

/** Every subcommand, in the order `skiff --help` lists them. */
const COMMANDS = {
  broker: {
    summary: 'run one broker (--config server.properties)',
    load: async () => (await import('./broker-command.js')).runBroker,
  },
  'dump-log': {
    summary: "print .log/.index/.timeindex/.txnindex/checkpoint files (Kafka's kafka-dump-log)",
    load: async () => (await import('./tools/dump-log.js')).runDumpLog,
  },
  topics: {
    summary: "create, list, describe, alter or delete topics (Kafka's kafka-topics)",
    load: async () => (await import('./tools/topics.js')).runTopics,
  },
  configs: {
    summary: "describe or alter topic, broker and client quota configs (Kafka's kafka-configs)",
    load: async () => (await import('./tools/configs.js')).runConfigs,
  },
  'log-dirs': {
    summary: "describe brokers' log directories (Kafka's kafka-log-dirs)",
    load: async () => (await import('./tools/log-dirs.js')).runLogDirs,
  },
  acls: {
    summary: "add, remove or list ACLs (Kafka's kafka-acls)",
    load: async () => (await import('./tools/acls.js')).runAcls,
  },
  'delete-records': {
    summary: "raise partitions' log start offsets (Kafka's kafka-delete-records)",
    load: async () => (await import('./tools/delete-records.js')).runDeleteRecords,
  },
  'get-offsets': {
    summary: "print partition offsets for a time (Kafka's kafka-get-offsets)",
    load: async () => (await import('./tools/get-offsets.js')).runGetOffsets,
  },
  'console-producer': {
    summary: "write stdin lines to a topic (Kafka's kafka-console-producer)",
    load: async () => (await import('./tools/console-producer.js')).runConsoleProducer,
  },
  'console-consumer': {
    summary: "print a topic's records (Kafka's kafka-console-consumer)",
    load: async () => (await import('./tools/console-consumer.js')).runConsoleConsumer,
  },
  'producer-perf-test': {
    summary: "measure produce throughput and latency (Kafka's kafka-producer-perf-test)",
    load: async () => (await import('./tools/producer-perf-test.js')).runProducerPerfTest,
  },
  'consumer-groups': {
    summary: "list, describe, reset or delete consumer groups (Kafka's kafka-consumer-groups)",
    load: async () => (await import('./tools/consumer-groups.js')).runConsumerGroups,
  },
  'consumer-perf-test': {
    summary: "measure consume throughput (Kafka's kafka-consumer-perf-test)",
    load: async () => (await import('./tools/consumer-perf-test.js')).runConsumerPerfTest,
  },
  'leader-election': {
    summary: "elect the preferred (or, unclean, any live) replica as leader (Kafka's kafka-leader-election)",
    load: async () => (await import('./tools/leader-election.js')).runLeaderElection,
  },
  'reassign-partitions': {
    summary: "move partition replicas between brokers and log dirs (Kafka's kafka-reassign-partitions)",
    load: async () => (await import('./tools/reassign-partitions.js')).runReassignPartitions,
  },
  'replica-verification': {
    summary: "check that every replica holds the same data (Kafka's kafka-replica-verification)",
    load: async () => (await import('./tools/replica-verification.js')).runReplicaVerification,
  },
  transactions: {
    summary:
      "list, describe or abort transactions, find hanging ones, describe producers (Kafka's kafka-transactions)",
    load: async () => (await import('./tools/transactions.js')).runTransactions,
  },
  'isr-history': {
    summary: 'the ISR/leadership change history of a topic, merged from every broker',
    load: async () => (await import('./tools/isr-history.js')).runIsrHistory,
  },
  'rebuild-plan': {
    summary: "whether a broker's replicas will catch up or rebuild, bytes to copy and the ETA",
    load: async () => (await import('./tools/rebuild-plan.js')).runRebuildPlan,
  },
  'replication-rate': {
    summary: 'observed replication bytes/s per broker and per replica, beside the throttle rates',
    load: async () => (await import('./tools/replication-rate.js')).runReplicationRate,
  },
  up: {
    summary: 'run a local cluster: N brokers and the metadata store (Ctrl-C stops it)',
    load: async () => (await import('./up.js')).runUp,
  },
  cluster: {
    summary: 'control a running `skiff up`: status, stop <id> [--kill], start <id>',
    load: async () => (await import('./cluster.js')).runCluster,
  },
} satisfies Record<string, CommandEntry>;

export type CommandName = keyof typeof COMMANDS;

/** A subcommand's name and summary, for its ToolDef. */
export function commandInfo(name: CommandName): CommandInfo {
  return { name, summary: COMMANDS[name].summary };
}

/** Every subcommand's name and summary, in `skiff --help` order. */
export function commandList(): CommandInfo[] {
  return Object.entries(COMMANDS).map(([name, c]) => ({ name, summary: c.summary }));
}

/** What loads the code of the subcommand `name`; undefined for a name that is no subcommand. */
export function commandLoader(name: string): (() => Promise<CommandRun>) | undefined {
  return Object.hasOwn(COMMANDS, name) ? COMMANDS[name as CommandName].load : undefined;
}
