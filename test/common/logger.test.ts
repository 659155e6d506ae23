import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { childLogger, lineLogger, parseLogFormat } from '../../src/common/logger.js';

test('lineLogger: text lines by default (fields unseen), one JSON object per line with log.format=json', () => {
  const clock = new ManualClock(Date.UTC(2026, 11, 1, 20, 53, 54, 123));
  const text: string[] = [];
  const json: string[] = [];
  const fields = { event: 'truncation', logEndOffset: 42n, huge: 2n ** 63n - 1n, message: 'dropped' };
  childLogger(
    lineLogger(clock, (l) => text.push(l)),
    '[P t-0]',
  ).info('truncated', fields);
  childLogger(
    lineLogger(clock, (l) => json.push(l), 'json'),
    '[P t-0]',
  ).warn('truncated', fields);
  assert.deepEqual(text, ['[2026-12-01T20:53:54.123Z] INFO [P t-0] truncated']);
  assert.equal(json.length, 1);
  assert.deepEqual(JSON.parse(json[0]!), {
    time: '2026-12-01T20:53:54.123Z',
    level: 'WARN',
    message: '[P t-0] truncated',
    event: 'truncation',
    logEndOffset: 42,
    huge: '9223372036854775807',
  });
});

test('parseLogFormat: text (also when absent) or json; anything else is refused', () => {
  assert.equal(parseLogFormat(undefined), 'text');
  assert.equal(parseLogFormat('json'), 'json');
  assert.equal(parseLogFormat(' text '), 'text');
  assert.throws(() => parseLogFormat('xml'), /Invalid value xml for configuration log.format/);
});
