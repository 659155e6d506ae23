/**
 * Skiff's deliberate differences from Kafka are stated in the --help of each tool they concern,
 * with the reason (README "Deliberate differences from Kafka"): the help text is what an operator
 * who knows Kafka's tool reads before trusting an answer that differs from it.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { skiff } from './in-process.js';

/** Per tool, the difference its help must state and its reason, as patterns over the help text. */
const DIFFERENCES: readonly [tool: string, difference: RegExp, reason: RegExp][] = [
  [
    'configs',
    /replica\.lag\.time\.max\.ms is a dynamic broker config in Skiff/,
    /Why: tuning when a\s+follower/,
  ],
  [
    'configs',
    /A stopped broker \(registered in the cluster metadata, not live\) is described/,
    /Kafka's admin client sends/,
  ],
  [
    'log-dirs',
    /offsetLag is Skiff's: the leader's LEO minus the replica's LEO/,
    /Why: an\s+operator deciding/,
  ],
  [
    'replica-verification',
    /it exits by itself once every partition has been compared/,
    /Why: Kafka's tool runs until it is killed/,
  ],
  [
    'dump-log',
    /an invalid or torn batch does not end the listing/,
    /Why: a segment is\s+dumped to see the damage/,
  ],
  [
    'broker',
    /a torn or corrupt tail found when a log is loaded is cut off the \.log file itself/,
    /Why: replicas stay byte-identical/,
  ],
  [
    'up',
    /a torn or corrupt tail found when a log is loaded is cut off the \.log file itself/,
    /Why: replicas stay byte-identical/,
  ],
];

describe("Skiff's differences from Kafka in the tools' --help", () => {
  for (const [tool, difference, reason] of DIFFERENCES) {
    it(`skiff ${tool} --help states ${difference.source.slice(0, 40)}… and why`, async () => {
      const r = await skiff([tool, '--help']);
      assert.equal(r.status, 0, r.stderr);
      assert.match(r.stdout, difference);
      assert.match(r.stdout, reason);
    });
  }
});
