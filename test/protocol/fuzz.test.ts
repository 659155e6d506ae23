import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { MetadataRequestCodec } from '../../src/protocol/generated/MetadataRequest.js';
import { ProtocolError } from '../../src/protocol/protocol-error.js';
import { Reader } from '../../src/protocol/reader.js';
import { readRequest } from '../../src/protocol/request-frame.js';
import { Writer } from '../../src/protocol/writer.js';
import { loadMessages, messageArb, versionsOf } from '../support/protocol-specs.js';

/**
 * Random and mutated bytes into every decoder: the only acceptable failure is a ProtocolError.
 * Lengths are checked before allocation (Reader), and every loop consumes input, so a decode
 * cannot hang; node:test's timeout is the backstop.
 */
const messages = await loadMessages();

function decodeOrProtocolError(decode: () => unknown, what: string): void {
  try {
    decode();
  } catch (e) {
    if (!(e instanceof ProtocolError)) {
      throw new Error(`${what}: ${(e as Error)?.constructor?.name}: ${(e as Error)?.message}`);
    }
  }
}

const mutation = fc.oneof(
  fc.record({ kind: fc.constant('flip' as const), at: fc.nat(), bits: fc.integer({ min: 1, max: 255 }) }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
  fc.record({ kind: fc.constant('ff' as const), at: fc.nat(), len: fc.integer({ min: 1, max: 5 }) }),
  fc.record({ kind: fc.constant('insert' as const), at: fc.nat(), byte: fc.integer({ min: 0, max: 255 }) }),
);

type Mutation = { kind: string; at: number; bits?: number; len?: number; byte?: number };

function mutate(buf: Buffer, ms: Mutation[]): Buffer {
  let b = Buffer.from(buf);
  for (const m of ms) {
    if (b.length === 0) break;
    const at = m.at % b.length;
    if (m.kind === 'flip') b[at] = (b[at] as number) ^ (m.bits as number);
    else if (m.kind === 'truncate') b = b.subarray(0, at);
    else if (m.kind === 'ff') b.fill(0xff, at, Math.min(b.length, at + (m.len as number)));
    else b = Buffer.concat([b.subarray(0, at), Buffer.from([m.byte as number]), b.subarray(at)]);
  }
  return b;
}

describe('fuzzing every decoder', { timeout: 120_000 }, () => {
  for (const m of messages) {
    it(`${m.spec.name}: random and mutated bytes give a value or a ProtocolError`, () => {
      for (const version of versionsOf(m.codec)) {
        const what = `${m.spec.name} v${version}`;
        fc.assert(
          fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
            decodeOrProtocolError(() => m.codec.decode(new Reader(Buffer.from(bytes)), version), what);
          }),
          { numRuns: 60, seed: 11 + version },
        );
        fc.assert(
          fc.property(
            messageArb(m, version),
            fc.array(mutation, { minLength: 1, maxLength: 3 }),
            (value, ms) => {
              const w = new Writer();
              m.codec.encode(w, value, version);
              const bad = mutate(w.toBuffer(), ms);
              decodeOrProtocolError(() => m.codec.decode(new Reader(bad), version), what);
            },
          ),
          { numRuns: 60, seed: 13 + version },
        );
      }
    });
  }

  it('an array length of 2^31-1 in a 20-byte frame is an error, not an allocation', () => {
    const body = Buffer.alloc(20);
    body.writeInt32BE(0x7fffffff, 0);
    const before = process.memoryUsage().arrayBuffers;
    assert.throws(() => MetadataRequestCodec.decode(new Reader(body), 4), ProtocolError);
    // Flexible versions: the same count as a compact (varint) length.
    const compact = Buffer.concat([Buffer.from('ffffffff07', 'hex'), Buffer.alloc(15)]);
    assert.throws(() => MetadataRequestCodec.decode(new Reader(compact), 12), ProtocolError);
    assert.ok(process.memoryUsage().arrayBuffers - before < 1024 * 1024);
  });

  it('request headers of random frames give a request or a ProtocolError', () => {
    fc.assert(
      fc.property(fc.uint8Array({ maxLength: 48 }), (bytes) => {
        decodeOrProtocolError(() => readRequest(Buffer.from(bytes)), 'request header');
      }),
      { numRuns: 2000, seed: 5 },
    );
  });
});
