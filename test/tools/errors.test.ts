import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import { ErrorCode, errorByCode, KAFKA_ERRORS } from '../../src/protocol/generated/errors.js';
import { KafkaError } from '../../src/protocol/kafka-error.js';
import {
  GENERATED_HEADER,
  generate,
  OUTPUT_PATH,
  parseErrorTable,
  repoRoot,
} from '../../tools/errors/generate.js';

const HEADER_ROW = 'code\tname\tretriable\tmessage';

describe('generated error table', () => {
  it('is up to date with tools/errors/kafka-errors.tsv', () => {
    const committed = readFileSync(join(repoRoot(), OUTPUT_PATH), 'utf8');
    assert.ok(committed.startsWith(`${GENERATED_HEADER}\n`), 'header line');
    assert.equal(
      committed,
      generate(),
      'src/protocol/generated/errors.ts is stale: run npx tsc -p . && node dist/tools/errors/generate.js',
    );
  });

  it('has unique codes and names, sorted from -1 without gaps', () => {
    const codes = KAFKA_ERRORS.map((e) => e.code);
    const names = KAFKA_ERRORS.map((e) => e.name);
    assert.equal(new Set(codes).size, codes.length);
    assert.equal(new Set(names).size, names.length);
    assert.deepEqual(
      codes,
      codes.map((_, i) => i - 1),
    );
    assert.ok(KAFKA_ERRORS.length >= 130, `only ${KAFKA_ERRORS.length} entries`);
    assert.equal(Object.keys(ErrorCode).length, KAFKA_ERRORS.length);
    for (const e of KAFKA_ERRORS) {
      assert.equal(ErrorCode[e.name], e.code, e.name);
      assert.equal(errorByCode(e.code), e);
      assert.ok(e.message.length > 0, e.name);
    }
  });

  it('agrees with Kafka on well-known codes', () => {
    const expected: [keyof typeof ErrorCode, number, boolean][] = [
      ['UNKNOWN_SERVER_ERROR', -1, false],
      ['NONE', 0, false],
      ['OFFSET_OUT_OF_RANGE', 1, false],
      ['CORRUPT_MESSAGE', 2, true],
      ['UNKNOWN_TOPIC_OR_PARTITION', 3, true],
      ['NOT_LEADER_OR_FOLLOWER', 6, true],
      ['REQUEST_TIMED_OUT', 7, true],
      ['MESSAGE_TOO_LARGE', 10, false],
      ['NOT_ENOUGH_REPLICAS', 19, true],
      ['NOT_ENOUGH_REPLICAS_AFTER_APPEND', 20, true],
      ['INVALID_REQUIRED_ACKS', 21, false],
      ['UNSUPPORTED_VERSION', 35, false],
      ['INVALID_REQUEST', 42, false],
      ['KAFKA_STORAGE_ERROR', 56, true],
      ['FENCED_LEADER_EPOCH', 74, true],
      ['UNKNOWN_LEADER_EPOCH', 75, true],
      ['INVALID_UPDATE_VERSION', 95, false],
      ['INELIGIBLE_REPLICA', 107, false],
    ];
    for (const [name, code, retriable] of expected) {
      assert.equal(ErrorCode[name], code, name);
      const info = errorByCode(code);
      assert.equal(info?.name, name);
      assert.equal(info?.retriable, retriable, `${name} retriable`);
    }
  });

  it('returns undefined for codes it does not know', () => {
    for (const code of [-2, KAFKA_ERRORS.length - 1, 0x7fff, 1.5, Number.NaN]) {
      assert.equal(errorByCode(code), undefined, String(code));
    }
  });
});

describe('parseErrorTable', () => {
  const table = (...rows: string[]) => ['# comment', HEADER_ROW, ...rows].join('\n');

  it('reads rows', () => {
    assert.deepEqual(parseErrorTable(table('-1\tA\tfalse\tx', '0\tB_2\ttrue\ty z')), [
      { code: -1, name: 'A', retriable: false, message: 'x' },
      { code: 0, name: 'B_2', retriable: true, message: 'y z' },
    ]);
  });

  it('rejects malformed tables with the line number', () => {
    const bad: [string, RegExp][] = [
      [table('-1\tA\tfalse'), /:3: expected 4/],
      [table('-1\tA\tfalse\tx', '1\tB\tfalse\ty'), /:4: code 1 out of order, expected 0/],
      [table('-1\tA\tfalse\tx', '0\tA\tfalse\ty'), /:4: duplicate name A/],
      [table('-1\ta\tfalse\tx'), /:3: name "a"/],
      [table('-1\tA\tyes\tx'), /:3: retriable/],
      [table('-1\tA\tfalse\t '), /:3: empty message/],
      [table('x\tA\tfalse\tm'), /:3: code "x"/],
      ['-1\tA\tfalse\tx', /:1: expected header/],
      [table(), /no rows/],
    ];
    for (const [text, pattern] of bad) assert.throws(() => parseErrorTable(text), pattern);
  });
});

describe('KafkaError', () => {
  it('takes code, name, retriability and default message from the table', () => {
    const e = KafkaError.fromCode(ErrorCode.NOT_LEADER_OR_FOLLOWER);
    assert.ok(e instanceof Error);
    assert.equal(e.name, 'KafkaError');
    assert.equal(e.code, 6);
    assert.equal(e.errorName, 'NOT_LEADER_OR_FOLLOWER');
    assert.equal(e.retriable, true);
    assert.equal(e.message, errorByCode(6)?.message);
  });

  it('keeps a specific message', () => {
    const e = KafkaError.fromCode(ErrorCode.INVALID_REQUIRED_ACKS, 'acks=2');
    assert.equal(e.message, 'acks=2');
    assert.equal(e.retriable, false);
  });

  it('keeps an unknown code, not retriable', () => {
    const e = KafkaError.fromCode(9999);
    assert.equal(e.code, 9999);
    assert.equal(e.errorName, 'UNKNOWN');
    assert.equal(e.retriable, false);
    assert.match(e.message, /9999/);
  });

  it('refuses NONE', () => {
    assert.throws(() => KafkaError.fromCode(ErrorCode.NONE), RangeError);
  });
});
