/**
 * Seeded fault simulation of a 3-broker cluster running the broker's own data path — the real
 * LogManager, ReplicaManager, Partitions, replication and its purgatory, and the Produce and Fetch
 * handlers — on real logs: crashes (some losing the tail of their active segments), restarts, cut
 * links, lost messages (a broken connection), messages held up and overtaken on other connections,
 * process pauses outliving the broker's session (fenced, then registering again), hosts' wall
 * clocks jumping forward and back (timers follow monotonic time), producers with acks=all, acks=1
 * and acks=0, idempotent producers sending a batch again when its answer is lost (the leader must
 * answer the duplicate, and no log may hold it twice), long-polling consumers. Invariants are
 * checked after every event (among them: no acks=all produce answered before the HW passes its
 * last offset, nothing left waiting once it could be answered); once the faults stop the replicas
 * must converge. SKIFF_SIM_SEED=n replays one seed; SKIFF_SIM_SEEDS=n runs n seeds (default 200).
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { faultRun } from './fault-run.js';

const only = process.env.SKIFF_SIM_SEED;
const count = Number(process.env.SKIFF_SIM_SEEDS ?? 200);
// Mostly clean elections; every fifth seed of the default run allows unclean ones.
const seeds =
  only !== undefined
    ? [Number(only)]
    : Array.from({ length: count }, (_, i) => ((i + 1) % 5 === 0 ? 100 + i + 1 : i + 1));

for (const seed of seeds) {
  test(`replication simulation, seed ${seed}`, async () => {
    const { c } = await faultRun(seed);
    try {
      assert.deepEqual(c.violations, [], c.report());
      assert.ok(c.acked.length > 50, `${c.acked.length} acknowledged batches only\n${c.report()}`);
      assert.ok(c.consumed > 50, `consumers read ${c.consumed} batches only\n${c.report()}`);
    } finally {
      c.close();
    }
  });
}

if (process.env.SKIFF_SIM_VERBOSE) {
  test('summary', async () => {
    const { c } = await faultRun(Number(only ?? 1));
    const ev = [...c.brokers.values()].flatMap((b) => b.events.map((e) => `${b.id}:${e.kind}`));
    console.log(
      JSON.stringify({
        events: c.queue.executed,
        acked: c.acked.length,
        errors: Object.fromEntries(c.produceErrors),
        changes: c.controller.changes.length,
        unclean: c.controller.changes.filter((x) => x.unclean).length,
        replicationEvents: ev,
        violations: c.violations,
      }),
    );
    for (const x of c.controller.changes.slice(-15))
      console.log(x.timeMs - 1_700_000_000_000, x.key, x.cause, JSON.stringify(x.next));
    c.close();
  });
}
