/**
 * Lying length prefixes and truncated frames against a real broker: each closes that one
 * connection (with one log line where the broker refused something), and the broker goes on
 * answering its other connections.
 */
import assert from 'node:assert/strict';
import net from 'node:net';
import { after, before, describe, it } from 'node:test';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { ApiVersionsResponse } from '../../src/protocol/generated/ApiVersionsResponse.js';
import { startBroker, type TestBroker } from './helpers.js';

const LIMIT = 4096;

/** A raw connection that writes `bytes` (optionally ends its side) and resolves once the broker closes it. */
function sendRaw(port: number, bytes: Buffer, end = false): Promise<void> {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => {
      s.write(bytes);
      if (end) s.end();
    });
    s.on('data', () => {});
    s.on('error', reject);
    s.on('close', () => resolve());
  });
}

function int32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeInt32BE(n);
  return b;
}

/** `bytes` (a request header and body) behind their size prefix. */
function frameOf(bytes: Buffer): Buffer {
  return Buffer.concat([int32(bytes.length), bytes]);
}

describe('lying frames against a broker', () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker({ 'socket.request.max.bytes': String(LIMIT) });
    conn = await b.connect();
  });
  after(async () => {
    await b.stop();
  });

  const stillServing = async () => {
    const r = await b.call<ApiVersionsResponse>(conn, 18, 3, {
      clientSoftwareName: 'x',
      clientSoftwareVersion: '1',
    });
    assert.equal(r.errorCode, 0);
    // And a new connection is served too.
    const fresh = await b.connect();
    const again = await b.call<ApiVersionsResponse>(fresh, 18, 0, {});
    assert.equal(again.errorCode, 0);
  };
  const newLines = (since: number) => b.logger.lines.slice(since);

  it('a frame length larger than what was sent, then a closed socket: the broker just lets go', async () => {
    const since = b.logger.lines.length;
    await sendRaw(b.port, Buffer.concat([int32(1000), Buffer.alloc(40, 1)]), true);
    await stillServing();
    assert.deepEqual(
      newLines(since).filter((l) => /error|exception/i.test(l)),
      [],
      'a client going away mid-frame is not an error',
    );
  });

  it('a length over socket.request.max.bytes closes that connection with one log line', async () => {
    const since = b.logger.lines.length;
    await sendRaw(b.port, int32(LIMIT + 1));
    const lines = newLines(since).filter((l) => l.includes(`limit of ${LIMIT} bytes`));
    assert.equal(lines.length, 1, newLines(since).join('\n'));
    await stillServing();
  });

  it('a negative length closes that connection with one log line', async () => {
    const since = b.logger.lines.length;
    await sendRaw(b.port, int32(-5));
    const lines = newLines(since).filter((l) => l.includes('invalid frame size -5'));
    assert.equal(lines.length, 1, newLines(since).join('\n'));
    await stillServing();
  });

  it('an array count lying inside a body closes that connection with one log line', async () => {
    const since = b.logger.lines.length;
    // Metadata v12 (flexible): header v2 (key, version, correlation id, client id, no tags), then a
    // topics compact array claiming 2^31-2 entries in a 30-byte frame.
    const body = Buffer.concat([
      Buffer.from([0, 3, 0, 12]),
      int32(77),
      Buffer.from([0, 3, 0x6c, 0x69, 0x65, 0]),
      Buffer.from([0xff, 0xff, 0xff, 0xff, 0x07]),
      Buffer.alloc(10),
    ]);
    await sendRaw(b.port, frameOf(body));
    assert.equal(newLines(since).length, 1, newLines(since).join('\n'));
    assert.match(newLines(since)[0]!, /clientId "lie"\): array length 2147483646 exceeds the 10 bytes left/);
    await stillServing();
  });

  it('a client id longer than its frame closes that connection with one log line', async () => {
    const since = b.logger.lines.length;
    // ApiVersions v0, header v1: a client id of 30000 bytes in a 12-byte frame.
    const body = Buffer.concat([Buffer.from([0, 18, 0, 0]), int32(5), Buffer.from([0x75, 0x30, 0x61, 0x62])]);
    await sendRaw(b.port, frameOf(body));
    assert.equal(newLines(since).length, 1, newLines(since).join('\n'));
    assert.match(newLines(since)[0]!, /string length 30000 exceeds the 2 bytes left/);
    await stillServing();
  });
});
