/**
 * Entry point of the process startCluster() forks: `skiff up` without a terminal. It hosts the
 * launcher (the embedded metadata store, one child process per broker, the control API that
 * `skiff cluster status --data-dir` reaches) and answers the API's requests on its IPC channel.
 *
 * When that channel closes — close(), or the caller's process gone however it died (a test runner
 * crashed, SIGKILL, Ctrl-C) — it stops the brokers gracefully, removes its temporary data dir
 * unless asked to keep it, and exits. So a cluster never outlives the code that started it.
 */
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { Admin } from '../client/admin.js';
import { KafkaClient } from '../client/kafka-client.js';
import { systemRuntime } from '../client/runtime.js';
import { Launcher } from '../cluster/launcher.js';
import { SystemClock } from '../common/clock.js';
import { watchParent } from '../common/parent-watch.js';
import { serveDashboard } from '../dashboard/index.js';
import {
  type BrokerInfo,
  CLUSTER_SPEC_ENV,
  type ClusterMessage,
  type ClusterRequest,
  type ClusterSpec,
  type TopicSpec,
} from './cluster-protocol.js';

/** How long createTopic waits for every running broker to know the new topic's leaders. */
const TOPIC_READY_TIMEOUT_MS = 30_000;

function send(m: ClusterMessage): void {
  if (process.connected) process.send?.(m);
}

function brokerInfos(launcher: Launcher): BrokerInfo[] {
  return launcher.status().brokers.map((b) => ({
    id: b.id,
    host: '127.0.0.1',
    port: b.port,
    pid: b.pid,
    logDir: b.logDir,
    running: b.state === 'running',
  }));
}

/** Creates the topic, then waits until every running broker answers Metadata with its leaders. */
async function createTopic(launcher: Launcher, topic: TopicSpec): Promise<void> {
  const running = brokerInfos(launcher).filter((b) => b.running);
  const runtime = systemRuntime();
  const client = new KafkaClient({ bootstrap: running, clientId: 'skiff-start-cluster', runtime });
  try {
    const [result] = await new Admin(client).createTopics([
      {
        name: topic.name,
        numPartitions: topic.partitions,
        replicationFactor: topic.replicationFactor,
        configs: new Map(Object.entries(topic.config)),
      },
    ]);
    if (result?.error) throw result.error;
  } finally {
    client.close();
  }
  const deadline = runtime.clock.nowMs() + TOPIC_READY_TIMEOUT_MS;
  for (const broker of running) {
    const one = new KafkaClient({ bootstrap: [broker], clientId: 'skiff-start-cluster', runtime });
    try {
      for (;;) {
        // A client bootstrapped with this broker alone keeps asking it (its one connection).
        const t = (await one.fetchMetadata([topic.name])).topics.get(topic.name);
        if (t && t.errorCode === 0 && t.partitions.length > 0 && t.partitions.every((p) => p.leader >= 0))
          break;
        if (runtime.clock.nowMs() > deadline)
          throw new Error(`topic ${topic.name}: broker ${broker.id} knows no leader for every partition yet`);
        await runtime.sleep(20);
      }
    } finally {
      one.close();
    }
  }
}

async function handle(launcher: Launcher, req: ClusterRequest): Promise<void> {
  switch (req.op) {
    case 'stopBroker':
      await launcher.stopBroker(req.id, req.kill);
      return;
    case 'startBroker':
      await launcher.startBroker(req.id);
      return;
    case 'createTopic':
      await createTopic(launcher, req.topic);
      return;
  }
}

async function main(): Promise<number> {
  if (process.send === undefined) {
    process.stderr.write('cluster-process: must be forked by startCluster() (no IPC channel)\n');
    return 2;
  }
  const spec = JSON.parse(process.env[CLUSTER_SPEC_ENV] ?? 'null') as ClusterSpec;
  const temporary = spec.dataDir === null;
  const dataDir =
    spec.dataDir === null ? mkdtempSync(path.join(tmpdir(), 'skiff-')) : path.resolve(spec.dataDir);
  process.title = `skiff cluster ${dataDir}`;
  const removeData = (): void => {
    if (temporary && !spec.keepData) rmSync(dataDir, { recursive: true, force: true, maxRetries: 5 });
  };
  // The caller's process is gone or closed the cluster: however that happened, stop.
  const gone = new Promise<void>((resolve) => {
    process.once('disconnect', resolve);
    process.once('SIGTERM', resolve);
    process.once('SIGINT', resolve);
    watchParent(() => resolve());
  });
  const clock = new SystemClock();
  let launcher: Launcher;
  try {
    launcher = await Launcher.start({
      brokers: spec.brokers,
      dataDir,
      ports: spec.ports ?? 'auto',
      httpPort: 0,
      brokerProps: new Map(Object.entries(spec.config)),
      clock,
      randomBytes,
      log: (line) => send({ skiffCluster: 'log', line }),
    });
  } catch (e) {
    send({ skiffCluster: 'failed', message: e instanceof Error ? e.message : String(e) });
    removeData();
    return 1;
  }
  const stopDashboard = serveDashboard(launcher, (e) =>
    send({ skiffCluster: 'log', line: `dashboard: ${e.message}` }),
  );
  send({
    skiffCluster: 'ready',
    clusterId: launcher.clusterId,
    dataDir,
    dashboardUrl: `${launcher.controlUrl}/`,
    brokers: brokerInfos(launcher),
  });
  process.on('message', (req: ClusterRequest) => {
    handle(launcher, req).then(
      () => send({ skiffCluster: 'reply', seq: req.seq, error: null, brokers: brokerInfos(launcher) }),
      (e: unknown) =>
        send({
          skiffCluster: 'reply',
          seq: req.seq,
          error: e instanceof Error ? e.message : String(e),
          brokers: brokerInfos(launcher),
        }),
    );
  });
  await gone;
  stopDashboard();
  await launcher.shutdown();
  removeData();
  return 0;
}

const code = await main();
if (process.connected) process.disconnect();
process.exit(code);
