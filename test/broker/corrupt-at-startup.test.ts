/**
 * Damaged files at start-up against a real broker, restarted on its own log dir: a checkpoint file
 * that does not parse is ignored with one warning (the log is recovered or re-read from the
 * batches), an unreadable producer snapshot is deleted and the producer state rebuilt from the
 * log, and garbage in a segment truncates the log at the first bad batch — nothing a good file
 * described is lost, and the broker serves produce and fetch afterwards.
 */
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { ProduceResponse } from '../../src/protocol/generated/ProduceResponse.js';
import { CLEAN_SHUTDOWN_FILE } from '../../src/storage/log-manager.js';
import { batch, createTopic, latestOffset, startBroker, type TestBroker } from './helpers.js';

async function produce(
  b: TestBroker,
  conn: ClientConnection,
  records: Buffer,
  topic = 'dmg',
): Promise<ProduceResponse> {
  return b.call<ProduceResponse>(conn, 0, 9, {
    transactionalId: null,
    acks: -1,
    timeoutMs: 1000,
    topicData: [{ name: topic, partitionData: [{ index: 0, records }] }],
  });
}

function logEndOffset(b: TestBroker, conn: ClientConnection, topic = 'dmg'): Promise<bigint> {
  return latestOffset(b, conn, topic);
}

/** A broker with `dmg`-0 holding three idempotent batches of 4 records (LEO 12), stopped cleanly. */
async function brokerWithData(): Promise<{ dir: string; logs: string; partition: string; sizes: number[] }> {
  const b = await startBroker();
  const conn = await b.connect();
  await createTopic(b, conn, 'dmg');
  const sizes: number[] = [];
  for (let i = 0; i < 3; i++) {
    const records = batch(4, { from: i * 4, producerId: 4242n, baseSequence: i * 4 });
    sizes.push(records.length);
    const r = await produce(b, conn, records);
    assert.equal(r.responses[0]!.partitionResponses[0]!.errorCode, 0);
  }
  await b.stop();
  const logs = path.join(b.dir, 'logs');
  return { dir: b.dir, logs, partition: path.join(logs, 'dmg-0'), sizes };
}

/** Restarts on `dir`; returns the new warnings and the LEO, after checking produce still works. */
async function restart(dir: string): Promise<{ warnings: string[]; leo: bigint; next: ProduceResponse }> {
  const b = await startBroker({}, dir);
  try {
    const conn = await b.connect();
    const leo = await logEndOffset(b, conn);
    // The idempotent producer goes on where its acknowledged sequence left off.
    const next = await produce(
      b,
      conn,
      batch(1, { from: 100, producerId: 4242n, baseSequence: Number(leo) }),
    );
    const warnings = b.logger.lines.filter((l) => /^(WARN|ERROR)/.test(l));
    return { warnings, leo, next };
  } finally {
    await b.stop();
  }
}

const GARBAGE = 'this is not a checkpoint\n\u0000\u0001\u0002';

describe('damaged files at start-up', () => {
  for (const file of [
    'recovery-point-offset-checkpoint',
    'log-start-offset-checkpoint',
    'replication-offset-checkpoint',
  ]) {
    it(`a garbled ${file} is ignored with one warning; nothing acknowledged is lost`, async () => {
      const d = await brokerWithData();
      fs.writeFileSync(path.join(d.logs, file), GARBAGE);
      const r = await restart(d.dir);
      assert.equal(r.warnings.filter((l) => l.includes(file)).length, 1, r.warnings.join('\n'));
      assert.equal(r.leo, 12n);
      assert.equal(r.next.responses[0]!.partitionResponses[0]!.errorCode, 0);
      assert.equal(r.next.responses[0]!.partitionResponses[0]!.baseOffset, 12n);
    });
  }

  it('a garbled leader-epoch-checkpoint is rebuilt from the batches, with one warning', async () => {
    const d = await brokerWithData();
    fs.writeFileSync(path.join(d.partition, 'leader-epoch-checkpoint'), GARBAGE);
    const r = await restart(d.dir);
    assert.equal(r.warnings.filter((l) => l.includes('leader epoch cache')).length, 1, r.warnings.join('\n'));
    assert.equal(r.leo, 12n);
    assert.equal(r.next.responses[0]!.partitionResponses[0]!.baseOffset, 12n);
    const [version, count, ...entries] = fs
      .readFileSync(path.join(d.partition, 'leader-epoch-checkpoint'), 'utf8')
      .trimEnd()
      .split('\n');
    assert.equal(version, '0');
    assert.equal(Number(count), entries.length);
    // The epoch of the batches, rebuilt; a restarted leader may have begun a new epoch at the LEO.
    assert.equal(entries[0], '0 0', 'the epoch of the batches, rebuilt');
    for (const e of entries.slice(1))
      assert.ok(BigInt(e.split(' ')[1]!) >= 12n, `entry ${e} is after the rebuilt data`);
  });

  it('an unreadable producer snapshot is deleted with one warning; the producer state is rebuilt from the log', async () => {
    const d = await brokerWithData();
    const snapshots = fs.readdirSync(d.partition).filter((f) => f.endsWith('.snapshot'));
    assert.ok(snapshots.length > 0, 'a clean shutdown writes a producer snapshot');
    for (const s of snapshots) fs.writeFileSync(path.join(d.partition, s), Buffer.alloc(30, 0xab));
    const r = await restart(d.dir);
    assert.equal(
      r.warnings.filter((l) => l.includes('producer snapshot')).length,
      snapshots.length,
      r.warnings.join('\n'),
    );
    assert.equal(r.leo, 12n);
    // Sequence 12 is the next one: the rebuilt state knows the producer's last sequence was 11.
    assert.equal(r.next.responses[0]!.partitionResponses[0]!.errorCode, 0);
    assert.equal(r.next.responses[0]!.partitionResponses[0]!.baseOffset, 12n);
  });

  it('garbage appended to the active segment is cut off at start-up, with one warning', async () => {
    const d = await brokerWithData();
    const segment = path.join(d.partition, '00000000000000000000.log');
    fs.appendFileSync(segment, Buffer.alloc(100, 0x5c));
    const r = await restart(d.dir);
    assert.equal(r.leo, 12n);
    assert.equal(r.warnings.length, 1, r.warnings.join('\n'));
    assert.equal(r.next.responses[0]!.partitionResponses[0]!.baseOffset, 12n);
  });

  it('after a crash, a byte flipped inside the second batch truncates the log at that batch, with one warning', async () => {
    const d = await brokerWithData();
    fs.rmSync(path.join(d.logs, CLEAN_SHUTDOWN_FILE), { force: true });
    // A crash: the recovery point is the log start, so every batch is checked.
    fs.writeFileSync(path.join(d.logs, 'recovery-point-offset-checkpoint'), '0\n1\ndmg 0 0\n');
    const segment = path.join(d.partition, '00000000000000000000.log');
    const bytes = fs.readFileSync(segment);
    bytes[d.sizes[0]! + d.sizes[1]! - 5]! ^= 0xff;
    fs.writeFileSync(segment, bytes);
    const r = await restart(d.dir);
    assert.equal(r.leo, 4n);
    assert.equal(r.warnings.length, 1, r.warnings.join('\n'));
    // The producer's sequence 4 follows its last one kept (3): its state was cut back too.
    assert.equal(r.next.responses[0]!.partitionResponses[0]!.errorCode, 0);
    assert.equal(r.next.responses[0]!.partitionResponses[0]!.baseOffset, 4n);
  });

  it('a garbled cleaner-offset-checkpoint is reset with one warning; the cleaner starts over and rewrites it', async () => {
    const props = { 'log.cleaner.backoff.ms': '50' };
    const first = await startBroker(props);
    const conn = await first.connect();
    await createTopic(first, conn, 'compacted', 1, { 'cleanup.policy': 'compact', 'segment.bytes': '200' });
    for (let i = 0; i < 6; i++) {
      const r = await produce(first, conn, batch(1, { from: 0, timestamp: BigInt(i) }), 'compacted');
      assert.equal(r.responses[0]!.partitionResponses[0]!.errorCode, 0);
    }
    await first.stop();
    const checkpoint = path.join(first.dir, 'logs', 'cleaner-offset-checkpoint');
    fs.writeFileSync(checkpoint, GARBAGE);
    const b = await startBroker(props, first.dir);
    try {
      const deadline = Date.now() + 20_000;
      while (!fs.readFileSync(checkpoint, 'utf8').startsWith('0\n')) {
        assert.ok(Date.now() < deadline, 'the cleaner rewrote its checkpoint within 20 s');
        await new Promise((r) => setTimeout(r, 50));
      }
      const warnings = b.logger.lines.filter((l) => l.includes('cleaner-offset-checkpoint'));
      assert.equal(warnings.length, 1, b.logger.lines.join('\n'));
      assert.match(fs.readFileSync(checkpoint, 'utf8'), /^0\n1\ncompacted 0 [1-9]\d*\n$/);
      assert.equal(await logEndOffset(b, await b.connect(), 'compacted'), 6n);
    } finally {
      await b.stop();
    }
  });
});
