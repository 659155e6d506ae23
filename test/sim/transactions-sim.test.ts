/**
 * Transactions in the seeded fault simulation (issue 20): the fault run of replication-sim.test.ts
 * (crashes, restarts, cut links, lost and held-up messages, pauses, clock jumps; clean elections,
 * no DeleteRecords) with a transactional producer and read_committed consumers beside the other
 * producers (test/sim/sim-transactions.ts). Invariants: read_committed never returns a record of
 * an aborted or undecided transaction; the last stable offset never passes the HW; once the
 * faults stop every committed record is read exactly once. SKIFF_SIM_SEED=n replays one seed;
 * SKIFF_SIM_TXN_SEEDS=n runs n seeds (default 30).
 */
import * as assert from 'node:assert/strict';
import { test } from 'node:test';
import { faultRun } from './fault-run.js';

const only = process.env.SKIFF_SIM_SEED;
const count = Number(process.env.SKIFF_SIM_TXN_SEEDS ?? 30);
const seeds = only !== undefined ? [Number(only)] : Array.from({ length: count }, (_, i) => 1000 + i);

for (const seed of seeds) {
  test(`transactions simulation, seed ${seed}`, async (t) => {
    const { c, txn } = await faultRun(seed, true);
    try {
      assert.deepEqual(c.violations, [], c.report());
      assert.ok(txn !== null);
      t.diagnostic(
        `${txn.committed} committed, ${txn.aborted} aborted, ${txn.recordsRead} records read committed`,
      );
      assert.ok(
        txn.committed > 5 && txn.aborted > 2,
        `${txn.committed} committed, ${txn.aborted} aborted\n${c.report()}`,
      );
    } finally {
      c.close();
    }
  });
}
