import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { BROKER_API_VERSIONS, TRANSACTION_API_VERSIONS } from '../../src/broker/api-versions.js';
import { frame } from '../../src/protocol/framing.js';
import type { ApiVersionsResponse } from '../../src/protocol/generated/ApiVersionsResponse.js';
import type { CreateTopicsResponse } from '../../src/protocol/generated/CreateTopicsResponse.js';
import { Writer } from '../../src/protocol/writer.js';
import { seededRandomBytes, startBroker, type TestBroker } from './helpers.js';

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A valid header (v1: no tagged fields, read by every API at v1/v2 alike up to the client id) and random body. */
function garbageRequest(apiKey: number, version: number, body: Buffer, correlationId: number): Buffer {
  const w = new Writer();
  w.int16(apiKey);
  w.int16(version);
  w.int32(correlationId);
  w.int16(-1); // null client id
  w.raw(body);
  return Buffer.concat(frame(w.chunksView()));
}

describe('garbage bodies for every implemented API and version', () => {
  let b: TestBroker;
  before(async () => {
    b = await startBroker();
    const c = await b.connect();
    await b.call<CreateTopicsResponse>(c, 19, 7, {
      timeoutMs: 1000,
      validateOnly: false,
      topics: [{ name: 'g', numPartitions: 1, replicationFactor: 1, assignments: [], configs: [] }],
    });
  });
  after(async () => {
    await b.stop();
  });

  it('never crash the broker nor stall other connections', async () => {
    const random = seededRandomBytes(7);
    const watcher = await b.connect('watcher');
    let sent = 0;
    for (const [apiKey, v] of [...BROKER_API_VERSIONS, ...TRANSACTION_API_VERSIONS]) {
      for (let version = v.min; version <= v.max; version++) {
        const c = await b.connect('fuzz');
        for (let i = 0; i < 8; i++) {
          const size = random(1)[0]! % 64;
          // Small random bodies: mostly truncated structures, sometimes valid-looking ones.
          c.writeRaw(garbageRequest(apiKey, version, random(size), i));
          sent++;
        }
        await sleep(2);
        c.close();
      }
    }
    // DeleteTopics or CreateTopics garbage may have changed topics; the broker must still answer.
    const r = await b.call<ApiVersionsResponse>(watcher, 18, 3, {
      clientSoftwareName: 'w',
      clientSoftwareVersion: '1',
    });
    assert.equal(r.errorCode, 0);
    assert.ok(sent > 500);
    assert.ok(
      !b.logger.lines.some((l) => l.includes('unexpected error')),
      b.logger.lines.filter((l) => l.includes('unexpected error')).join('\n'),
    );
  });
});
