import { DUMP_LOG_SUMMARY, runDumpLog } from '../storage/dump-log-cli.js';
import { BROKER_SUMMARY, runBroker } from './broker-command.js';
import { CLUSTER_SUMMARY, runCluster } from './cluster.js';
import { CONFIGS, runConfigs } from './tools/configs.js';
import { CONSOLE_CONSUMER, runConsoleConsumer } from './tools/console-consumer.js';
import { CONSOLE_PRODUCER, runConsoleProducer } from './tools/console-producer.js';
import { CONSUMER_GROUPS, runConsumerGroups } from './tools/consumer-groups.js';
import { CONSUMER_PERF_TEST, runConsumerPerfTest } from './tools/consumer-perf-test.js';
import { DELETE_RECORDS, runDeleteRecords } from './tools/delete-records.js';
import { GET_OFFSETS, runGetOffsets } from './tools/get-offsets.js';
import { ISR_HISTORY, runIsrHistory } from './tools/isr-history.js';
import { LOG_DIRS, runLogDirs } from './tools/log-dirs.js';
import { PRODUCER_PERF_TEST, runProducerPerfTest } from './tools/producer-perf-test.js';
import { REASSIGN_PARTITIONS, runReassignPartitions } from './tools/reassign-partitions.js';
import { REBUILD_PLAN, runRebuildPlan } from './tools/rebuild-plan.js';
import { REPLICA_VERIFICATION, runReplicaVerification } from './tools/replica-verification.js';
import { REPLICATION_RATE, runReplicationRate } from './tools/replication-rate.js';
import { runTopics, TOPICS } from './tools/topics.js';
import { runUp, UP_SUMMARY } from './up.js';

/** The `skiff` command: dispatches to one subcommand per Kafka tool name. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

interface Command {
  summary: string;
  run(args: string[], io: CliIo): Promise<number>;
}

const commands: Record<string, Command> = {
  broker: { summary: BROKER_SUMMARY, run: runBroker },
  'dump-log': { summary: DUMP_LOG_SUMMARY, run: runDumpLog },
  topics: { summary: TOPICS.summary, run: (args, io) => runTopics(args, io) },
  configs: { summary: CONFIGS.summary, run: (args, io) => runConfigs(args, io) },
  'log-dirs': { summary: LOG_DIRS.summary, run: (args, io) => runLogDirs(args, io) },
  'delete-records': { summary: DELETE_RECORDS.summary, run: (args, io) => runDeleteRecords(args, io) },
  'get-offsets': { summary: GET_OFFSETS.summary, run: (args, io) => runGetOffsets(args, io) },
  'console-producer': { summary: CONSOLE_PRODUCER.summary, run: (args, io) => runConsoleProducer(args, io) },
  'console-consumer': { summary: CONSOLE_CONSUMER.summary, run: (args, io) => runConsoleConsumer(args, io) },
  'producer-perf-test': {
    summary: PRODUCER_PERF_TEST.summary,
    run: (args, io) => runProducerPerfTest(args, io),
  },
  'consumer-groups': { summary: CONSUMER_GROUPS.summary, run: (args, io) => runConsumerGroups(args, io) },
  'consumer-perf-test': {
    summary: CONSUMER_PERF_TEST.summary,
    run: (args, io) => runConsumerPerfTest(args, io),
  },
  'reassign-partitions': {
    summary: REASSIGN_PARTITIONS.summary,
    run: (args, io) => runReassignPartitions(args, io),
  },
  'replica-verification': {
    summary: REPLICA_VERIFICATION.summary,
    run: (args, io) => runReplicaVerification(args, io),
  },
  'isr-history': { summary: ISR_HISTORY.summary, run: (args, io) => runIsrHistory(args, io) },
  'rebuild-plan': { summary: REBUILD_PLAN.summary, run: (args, io) => runRebuildPlan(args, io) },
  'replication-rate': {
    summary: REPLICATION_RATE.summary,
    run: (args, io) => runReplicationRate(args, io),
  },
  up: { summary: UP_SUMMARY, run: runUp },
  cluster: { summary: CLUSTER_SUMMARY, run: runCluster },
};

function usage(io: CliIo): void {
  io.out('Usage: skiff <command> [options]');
  io.out('');
  io.out('Commands:');
  for (const [name, cmd] of Object.entries(commands)) io.out(`  ${name.padEnd(22)}${cmd.summary}`);
  io.out('');
  io.out('Run `skiff <command> --help` for the options of one command.');
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    usage(io);
    return 0;
  }
  const cmd = commands[name];
  if (!cmd) {
    io.err(`skiff: unknown command '${name}' (try: skiff --help)`);
    return 2;
  }
  try {
    return await cmd.run(rest, io);
  } catch (e) {
    io.err(`skiff ${name}: ${e instanceof Error ? e.message : String(e)}`);
    return 1;
  }
}
