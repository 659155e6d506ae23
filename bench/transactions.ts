import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { median } from './baseline.js';
import { createTopic, startBroker } from './broker.js';

/**
 * Issue 20's targets, measured in one run with one client (librdkafka through
 * python3-confluent-kafka) against one `skiff broker`: transactional produce (1 KiB records, 100
 * per transaction, commit after each) ≥ 0.5× idempotent produce of the same records without
 * transactions; read_committed consume ≥ 0.9× read_uncommitted of the same transactional topic.
 * The two sides alternate over ROUNDS rounds; each figure is the median, measured inside the
 * client from the first send to the last acknowledgement (init_transactions and a first transaction
 * excluded).
 */
const RECORDS = Number(process.env.SKIFF_BENCH_TXN_RECORDS ?? 20_000);
const PER_TXN = 100;
const ROUNDS = 3;
const PRODUCE_TARGET = 0.5;
const CONSUME_TARGET = 0.9;

const PY = `
import sys, time
from confluent_kafka import Producer, Consumer
mode, bs, topic, n, per = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
value = b'x' * 1024
if mode in ('txn', 'idempotent'):
    conf = {'bootstrap.servers': bs, 'enable.idempotence': True, 'linger.ms': 5}
    if mode == 'txn':
        conf['transactional.id'] = 'bench-' + topic
    p = Producer(conf)
    if mode == 'txn':
        p.init_transactions(30)
        # One transaction before the clock starts: the coordinator's first answers (its partition
        # of __transaction_state loading) are not the steady state.
        p.begin_transaction()
        p.produce(topic, value=value)
        p.commit_transaction(30)
    start = time.perf_counter()
    for i in range(n):
        if mode == 'txn' and i % per == 0:
            p.begin_transaction()
        while True:
            try:
                p.produce(topic, value=value)
                break
            except BufferError:
                p.poll(0.01)
        if mode == 'txn' and i % per == per - 1:
            p.commit_transaction(30)
    p.flush(60)
    print(time.perf_counter() - start)
else:
    c = Consumer({'bootstrap.servers': bs, 'group.id': 'bench-' + mode + str(time.time()),
                  'auto.offset.reset': 'earliest', 'isolation.level': mode, 'enable.auto.commit': False})
    c.subscribe([topic])
    got, start = 0, None
    while got < n:
        msgs = c.consume(1000, 10)
        if not msgs:
            break
        if start is None:
            start = time.perf_counter()
        got += sum(1 for m in msgs if m.error() is None)
    print(time.perf_counter() - start if got >= n else -1)
    c.close()
`;

function run(mode: string, bootstrap: string, topic: string): number {
  const r = spawnSync(
    '/usr/bin/python3',
    ['-c', PY, mode, bootstrap, topic, String(RECORDS), String(PER_TXN)],
    {
      encoding: 'utf8',
      timeout: 300_000,
    },
  );
  const seconds = Number(r.stdout.trim().split('\n').at(-1));
  if (r.status !== 0 || !(seconds > 0))
    throw new Error(`${mode} on ${topic} failed: ${r.stderr || r.stdout}`);
  return seconds;
}

export async function benchTransactions(): Promise<void> {
  console.log(
    `transactions: ${RECORDS} × 1 KiB, ${PER_TXN} per transaction, librdkafka (python3-confluent-kafka), one skiff broker, ${ROUNDS} alternated rounds`,
  );
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-txn-'));
  const broker = await startBroker(dir, [
    'offsets.topic.replication.factor=1',
    'transaction.state.log.replication.factor=1',
    'transaction.state.log.min.isr=1',
  ]);
  const bootstrap = `127.0.0.1:${broker.port}`;
  try {
    const txn: number[] = [];
    const idem: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      for (const [mode, out] of [
        ['txn', txn],
        ['idempotent', idem],
      ] as const) {
        const topic = `${mode}-${round}`;
        createTopic(bootstrap, topic);
        out.push(run(mode, bootstrap, topic));
      }
    }
    const rate = (s: number) => RECORDS / s;
    const produceRatio = rate(median(txn)) / rate(median(idem));
    console.log(
      `  produce: transactional ${rate(median(txn)).toFixed(0)} records/s, idempotent ${rate(median(idem)).toFixed(0)} records/s: ${produceRatio.toFixed(2)}× (target ≥ ${PRODUCE_TARGET}×: ${produceRatio >= PRODUCE_TARGET ? 'met' : 'NOT met'})`,
    );
    const committed: number[] = [];
    const uncommitted: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      committed.push(run('read_committed', bootstrap, `txn-${round}`));
      uncommitted.push(run('read_uncommitted', bootstrap, `txn-${round}`));
    }
    const consumeRatio = median(uncommitted) / median(committed);
    console.log(
      `  consume of the transactional topic: read_committed ${rate(median(committed)).toFixed(0)} records/s, read_uncommitted ${rate(median(uncommitted)).toFixed(0)} records/s: ${consumeRatio.toFixed(2)}× (target ≥ ${CONSUME_TARGET}×: ${consumeRatio >= CONSUME_TARGET ? 'met' : 'NOT met'})`,
    );
  } finally {
    await broker.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchTransactions();
