import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { silentLogger } from '../../src/common/logger.js';
import { type FollowerLogView, offsetTruncationState } from '../../src/replication/truncation.js';
import { LeaderEpochFileCache } from '../../src/storage/leader-epoch-cache.js';

/** A follower whose epoch cache holds `entries` ([epoch, start offset]) and whose LEO is `leo`. */
function follower(entries: [number, bigint][], leo: bigint, fetchOffset = leo): FollowerLogView {
  const cache = new LeaderEpochFileCache(null, silentLogger, 't-0');
  for (const [e, o] of entries) cache.assign(e, o);
  return { fetchOffset, logEndOffset: leo, endOffsetForEpoch: (e) => cache.endOffsetFor(e, leo) };
}

test('leader end offset undefined: stay at the fetch offset', () => {
  const s = offsetTruncationState({ epoch: 3, endOffset: -1n }, follower([[1, 0n]], 50n, 40n));
  assert.deepEqual(s, { offset: 40n, truncationCompleted: true });
});

test('leader epoch undefined: min(leader end offset, LEO)', () => {
  assert.deepEqual(offsetTruncationState({ epoch: -1, endOffset: 30n }, follower([[1, 0n]], 50n)), {
    offset: 30n,
    truncationCompleted: true,
  });
  assert.deepEqual(offsetTruncationState({ epoch: -1, endOffset: 80n }, follower([[1, 0n]], 50n)), {
    offset: 50n,
    truncationCompleted: true,
  });
});

test('follower does not know the epoch: min(leader end offset, LEO)', () => {
  // An empty epoch cache answers (-1, -1) for every epoch.
  assert.deepEqual(offsetTruncationState({ epoch: 4, endOffset: 20n }, follower([], 50n)), {
    offset: 20n,
    truncationCompleted: true,
  });
});

test('same epoch on both sides: min(own end, leader end, LEO)', () => {
  // Follower: epoch 1 from 0, epoch 2 from 10 → its epoch 1 ends at 10.
  const f = follower(
    [
      [1, 0n],
      [2, 10n],
    ],
    25n,
  );
  assert.deepEqual(offsetTruncationState({ epoch: 1, endOffset: 8n }, f), {
    offset: 8n,
    truncationCompleted: true,
  });
  assert.deepEqual(offsetTruncationState({ epoch: 1, endOffset: 15n }, f), {
    offset: 10n,
    truncationCompleted: true,
  });
  // The follower's latest epoch ends at its LEO.
  assert.deepEqual(offsetTruncationState({ epoch: 2, endOffset: 40n }, f), {
    offset: 25n,
    truncationCompleted: true,
  });
});

test('different epoch: truncate to the own end of the floor epoch and ask again', () => {
  // Follower has epochs 1@0 and 3@10; the leader answers for epoch 2 (which the follower never had):
  // the follower's floor for 2 is epoch 1, ending at 10.
  const f = follower(
    [
      [1, 0n],
      [3, 10n],
    ],
    30n,
  );
  assert.deepEqual(offsetTruncationState({ epoch: 2, endOffset: 20n }, f), {
    offset: 10n,
    truncationCompleted: false,
  });
});

test('never beyond the LEO', () => {
  const f = follower([[5, 0n]], 7n);
  assert.deepEqual(offsetTruncationState({ epoch: 5, endOffset: 9n }, f), {
    offset: 7n,
    truncationCompleted: true,
  });
});
