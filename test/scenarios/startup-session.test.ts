/**
 * Start-up never races the broker session (issue 25): a broker holding thousands of partitions
 * after a crash starts with the DEFAULT broker.session.timeout.ms (9 s; other scenarios shorten it).
 * Recovering every log takes longer than the session; the broker, registered and fenced
 * meanwhile, keeps its session alive while loading — no "lease expired", no second registration —
 * and then serves the partitions it loaded.
 *
 * The broker's state is written on disk before it starts, as a crashed broker leaves it: a lone
 * broker's first log dir holding `skiff-metadata.json` (a pre-one-model broker's topics, which a
 * cluster of one imports into its metadata store) and one directory per partition in Kafka's
 * layout, each with its `partition.metadata`, and no clean-shutdown marker — so every log is
 * recovered. Creating thousands of partitions through a broker would take longer than the test.
 *
 * The load time is the broker's own "loaded N logs in DIR in X ms" line, printed beside the
 * session timeout: how many partitions outlast the session depends on the machine (PARTITIONS;
 * SKIFF_STARTUP_PARTITIONS changes it). Without loading in slices the broker's lease expires while
 * it loads and it registers again.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { after, describe, it } from 'node:test';
import { randomUuid } from '../../src/protocol/uuid.js';
import { kcat, requireTool } from '../cluster/helpers.js';
import { type BrokerProcess, startBrokerProcess } from '../support/broker-process.js';

const PARTITIONS = Number(process.env.SKIFF_STARTUP_PARTITIONS ?? 10_000);
/** broker.session.timeout.ms's default: the property is left out of server.properties. */
const DEFAULT_SESSION_TIMEOUT_MS = 9000;
const TOPIC = 'many';

/** A crashed single broker's log dir: its topic in skiff-metadata.json, a directory per partition. */
function writeCrashedBroker(logDir: string): void {
  const topicId = randomUuid(randomBytes);
  fs.mkdirSync(logDir, { recursive: true });
  const legacy = {
    version: 1,
    clusterId: randomUuid(randomBytes),
    topics: [
      { name: TOPIC, topicId, internal: false, replicas: Array.from({ length: PARTITIONS }, () => [1]) },
    ],
    topicConfigs: {},
    brokerConfigs: {},
  };
  fs.writeFileSync(path.join(logDir, 'skiff-metadata.json'), JSON.stringify(legacy));
  for (let p = 0; p < PARTITIONS; p++) {
    const dir = path.join(logDir, `${TOPIC}-${p}`);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'partition.metadata'), `version: 0\ntopic_id: ${topicId}`);
  }
}

describe('start-up with thousands of partitions and the default session timeout', () => {
  let broker: BrokerProcess | undefined;
  after(async () => {
    await broker?.stop();
  });

  it('recovers its logs for longer than the session, keeps the session, then serves', async (t) => {
    requireTool('kcat', '-V');
    // No descriptor per partition is needed: a loaded log holds none until it is read or written.
    const startMs = Date.now();
    // No broker.session.timeout.ms / broker.heartbeat.interval.ms: Kafka's defaults.
    broker = await startBrokerProcess([], 120_000, writeCrashedBroker);
    const out = broker.output();
    const loaded = /loaded (\d+) logs in \S+ in (\d+) ms \(no clean-shutdown marker/.exec(out);
    assert.ok(loaded, `no load line:\n${out.slice(-3000)}`);
    assert.equal(Number(loaded[1]), PARTITIONS);
    const loadMs = Number(loaded[2]);
    const at = (what: RegExp): number => {
      const m = new RegExp(`\\[([^\\]]+)\\] INFO broker 1: ${what.source}`).exec(out);
      assert.ok(m, `no '${what.source}' line:\n${out.slice(-3000)}`);
      return Date.parse(m[1]!);
    };
    const fencedMs = at(/unfenced with epoch/) - at(/registered with epoch/);
    t.diagnostic(
      `${PARTITIONS} logs recovered in ${loadMs} ms, registered and fenced for ${fencedMs} ms (broker.session.timeout.ms ${DEFAULT_SESSION_TIMEOUT_MS}); ready ${Date.now() - startMs} ms after the test began`,
    );
    if (loadMs <= DEFAULT_SESSION_TIMEOUT_MS)
      t.diagnostic('the load was shorter than the session on this machine: raise SKIFF_STARTUP_PARTITIONS');
    assert.match(out, /Recovering \d+ logs from .* since no clean shutdown file was found/);

    // Serving: the last partition takes a record and gives it back.
    const last = String(PARTITIONS - 1);
    const produced = await kcat(['-b', broker.bootstrap, '-P', '-t', TOPIC, '-p', last], 'after\n');
    assert.equal(produced.status, 0, produced.stderr);
    const consumed = await kcat([
      '-b',
      broker.bootstrap,
      '-C',
      '-t',
      TOPIC,
      '-p',
      last,
      '-o',
      'beginning',
      '-e',
    ]);
    assert.equal(consumed.status, 0, consumed.stderr);
    assert.equal(consumed.stdout, 'after\n');
    // Checked last: a lease lost during the load shows by now (the broker registers again).
    const all = broker.output();
    assert.doesNotMatch(all, /lease expired|registering again|lease \S+ not found/);
    assert.equal((all.match(/unfenced with epoch/g) ?? []).length, 1, all.slice(-3000));
  });
});
