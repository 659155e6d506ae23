import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ManualClock } from '../../src/common/clock.js';
import { EventJournal, journaling } from '../../src/common/event-journal.js';
import { MemoryLogger } from '../../src/common/logger.js';

describe('EventJournal', () => {
  it('keeps the journaled events a logger sees, as logged, the latest max of them', () => {
    const clock = new ManualClock(1000);
    const journal = new EventJournal(clock, 2);
    const inner = new MemoryLogger();
    const logger = journaling(inner, journal);
    logger.info('plain line');
    logger.info('started', { event: 'startup' });
    logger.warn('t-0: recovered segment 0', { event: 'recovery', truncatedBytes: 12 });
    clock.advance(5);
    logger.info('Truncating partition t-0', { event: 'truncation', bytesDiscarded: 7n });
    clock.advance(5);
    logger.warn('Rebuilding partition t-1', { event: 'rebuild', bytesDiscarded: 9 });
    assert.equal(inner.lines.length, 5, 'every line still reaches the log');
    assert.deepEqual(
      journal.list().map((e) => [e.timeMs, e.level, e.event, e.message]),
      [
        [1005, 'INFO', 'truncation', 'Truncating partition t-0'],
        [1010, 'WARN', 'rebuild', 'Rebuilding partition t-1'],
      ],
    );
    assert.equal(journal.list()[0]!.fields.bytesDiscarded, 7n);
  });
});
