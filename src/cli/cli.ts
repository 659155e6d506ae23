import { BROKER, runBroker } from './broker-command.js';
import { CLUSTER, runCluster } from './cluster.js';
import type { ToolDef } from './tools/common.js';
import { CONFIGS, runConfigs } from './tools/configs.js';
import { CONSOLE_CONSUMER, runConsoleConsumer } from './tools/console-consumer.js';
import { CONSOLE_PRODUCER, runConsoleProducer } from './tools/console-producer.js';
import { CONSUMER_GROUPS, runConsumerGroups } from './tools/consumer-groups.js';
import { CONSUMER_PERF_TEST, runConsumerPerfTest } from './tools/consumer-perf-test.js';
import { DELETE_RECORDS, runDeleteRecords } from './tools/delete-records.js';
import { DUMP_LOG, runDumpLog } from './tools/dump-log.js';
import { GET_OFFSETS, runGetOffsets } from './tools/get-offsets.js';
import { ISR_HISTORY, runIsrHistory } from './tools/isr-history.js';
import { LOG_DIRS, runLogDirs } from './tools/log-dirs.js';
import { PRODUCER_PERF_TEST, runProducerPerfTest } from './tools/producer-perf-test.js';
import { REASSIGN_PARTITIONS, runReassignPartitions } from './tools/reassign-partitions.js';
import { REBUILD_PLAN, runRebuildPlan } from './tools/rebuild-plan.js';
import { REPLICA_VERIFICATION, runReplicaVerification } from './tools/replica-verification.js';
import { REPLICATION_RATE, runReplicationRate } from './tools/replication-rate.js';
import { runTopics, TOPICS } from './tools/topics.js';
import { runUp, UP } from './up.js';

/** The `skiff` command: dispatches to one subcommand per Kafka tool name. */
export interface CliIo {
  out(line: string): void;
  err(line: string): void;
}

/** One subcommand: its declaration (name, summary, flags — tools/common.ts) and how it runs. */
interface Command {
  readonly def: ToolDef;
  run(args: string[], io: CliIo): Promise<number>;
}

/** Every subcommand, declared the same way, in the order `skiff --help` lists them. */
const COMMANDS: readonly Command[] = [
  { def: BROKER, run: (args, io) => runBroker(args, io) },
  { def: DUMP_LOG, run: (args, io) => runDumpLog(args, io) },
  { def: TOPICS, run: (args, io) => runTopics(args, io) },
  { def: CONFIGS, run: (args, io) => runConfigs(args, io) },
  { def: LOG_DIRS, run: (args, io) => runLogDirs(args, io) },
  { def: DELETE_RECORDS, run: (args, io) => runDeleteRecords(args, io) },
  { def: GET_OFFSETS, run: (args, io) => runGetOffsets(args, io) },
  { def: CONSOLE_PRODUCER, run: (args, io) => runConsoleProducer(args, io) },
  { def: CONSOLE_CONSUMER, run: (args, io) => runConsoleConsumer(args, io) },
  { def: PRODUCER_PERF_TEST, run: (args, io) => runProducerPerfTest(args, io) },
  { def: CONSUMER_GROUPS, run: (args, io) => runConsumerGroups(args, io) },
  { def: CONSUMER_PERF_TEST, run: (args, io) => runConsumerPerfTest(args, io) },
  { def: REASSIGN_PARTITIONS, run: (args, io) => runReassignPartitions(args, io) },
  { def: REPLICA_VERIFICATION, run: (args, io) => runReplicaVerification(args, io) },
  { def: ISR_HISTORY, run: (args, io) => runIsrHistory(args, io) },
  { def: REBUILD_PLAN, run: (args, io) => runRebuildPlan(args, io) },
  { def: REPLICATION_RATE, run: (args, io) => runReplicationRate(args, io) },
  { def: UP, run: (args, io) => runUp(args, io) },
  { def: CLUSTER, run: (args, io) => runCluster(args, io) },
];

const commands = new Map(COMMANDS.map((c) => [c.def.name, c]));

function usage(io: CliIo): void {
  io.out('Usage: skiff <command> [options]');
  io.out('');
  io.out('Commands:');
  for (const { def } of COMMANDS) io.out(`  ${def.name.padEnd(22)}${def.summary}`);
  io.out('');
  io.out('Run `skiff <command> --help` for the options of one command.');
}

export async function runCli(argv: string[], io: CliIo): Promise<number> {
  const [name, ...rest] = argv;
  if (name === undefined || name === '--help' || name === '-h' || name === 'help') {
    usage(io);
    return 0;
  }
  const cmd = commands.get(name);
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
