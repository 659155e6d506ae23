import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import fc from 'fast-check';
import { Reader } from '../../src/protocol/reader.js';
import { Writer } from '../../src/protocol/writer.js';
import { loadMessages, messageArb, versionsOf } from '../support/protocol-specs.js';

const messages = await loadMessages();

describe('every generated message round-trips at every version', () => {
  it('covers every spec file', () => {
    assert.ok(messages.length >= 210, `only ${messages.length} specs found`);
    for (const m of messages) assert.ok(m.codec, `${m.spec.name} has no codec`);
  });

  for (const m of messages) {
    it(`${m.spec.name} v${m.codec.minVersion}-${m.codec.maxVersion}`, () => {
      for (const version of versionsOf(m.codec)) {
        // Defaults always encode and decode back to themselves.
        const dw = new Writer();
        m.codec.encode(dw, m.codec.defaults(), version);
        const dr = new Reader(dw.toBuffer());
        assert.deepStrictEqual(m.codec.decode(dr, version), m.codec.defaults());
        assert.equal(dr.remaining, 0);

        fc.assert(
          fc.property(messageArb(m, version), (value) => {
            const w = new Writer();
            m.codec.encode(w, value, version);
            const bytes = w.toBuffer();
            assert.equal(bytes.length, w.length);
            const r = new Reader(bytes);
            const decoded = m.codec.decode(r, version);
            assert.equal(r.remaining, 0, `${m.spec.name} v${version} left ${r.remaining} bytes`);
            assert.deepStrictEqual(decoded, value);
          }),
          { numRuns: 15, seed: 20261129 + version },
        );
      }
    });
  }
});
