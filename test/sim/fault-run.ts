/**
 * One seeded fault run (shared by the simulation test and by anyone replaying a seed by hand):
 * faults for 9 s of simulated time, then healing and convergence checks.
 */
import { defaultClusterConfig, SimCluster } from './sim-cluster.js';
import { SimTransactions } from './sim-transactions.js';

/**
 * Seeds above 100 run with unclean.leader.election.enable and min.insync.replicas 1. Every third
 * seed misbehaves more: messages held up (overtaken on other connections), process pauses and
 * wall clock jumps.
 */
export function misbehaves(seed: number): boolean {
  return seed % 3 === 0;
}

export async function faultRun(
  seed: number,
  /** Runs transactions beside the other producers (clean elections only, no DeleteRecords). */
  transactions = false,
): Promise<{ c: SimCluster; txn: SimTransactions | null }> {
  const config = defaultClusterConfig();
  if (seed > 100 && !transactions) {
    config.uncleanElection = true;
    config.broker.minInsyncReplicas = 1;
  }
  const c = new SimCluster(seed, config);
  const r = c.random;
  const misbehave = misbehaves(seed);
  if (misbehave) c.net.config.stallRate = 0.05;
  c.start();
  await c.run(500);
  c.startProducing(20);
  c.startIdempotentProducing(40);
  c.startConsuming();
  const txn = transactions ? new SimTransactions(c) : null;
  txn?.start(30);
  txn?.startConsuming();
  const dead = new Set<number>();
  for (let t = 0; t < 9000; ) {
    const step = r.between(300, 1200);
    await c.run(step);
    t += step;
    const ids = [...c.brokers.keys()];
    const action = r.int(misbehave ? 16 : 12);
    if (action < 3 && dead.size < 2) {
      const id = r.pick(ids.filter((i) => !dead.has(i)));
      // A power cut (lost tail) only where another live ISR member holds everything acknowledged:
      // Kafka without fsync loses acknowledged data when every copy loses it, and so would we.
      const safe = [...c.controller.records.values()].every(
        (rec) => !rec.isr.includes(id) || rec.isr.some((o) => o !== id && !dead.has(o)),
      );
      c.brokers.get(id)!.crash(safe && r.chance(0.4) ? r.between(1, 400) : 0);
      dead.add(id);
    } else if (action < 6 && dead.size > 0) {
      const id = r.pick([...dead]);
      c.brokers.get(id)!.start();
      dead.delete(id);
    } else if (action < 8) {
      const a = r.pick(ids);
      const b = r.pick(ids.filter((i) => i !== a));
      c.net.cutLink(a, b);
      c.queue.schedule('heal', r.between(500, 4000), () => c.net.healAll());
    } else if (action < 10) {
      c.net.config.dropRate = r.chance(0.5) ? r.next() * 0.05 : 0;
    } else if (action >= 14) {
      // A host's wall clock steps (NTP, an operator): timestamps and wall-clock durations jump.
      c.brokers.get(r.pick(ids))!.jumpClock((r.chance(0.5) ? 1 : -1) * r.between(100, 5000));
    } else if (action >= 12) {
      // A GC pause or SIGSTOP: long ones outlive the session, the broker is fenced and rejoins.
      const live = ids.filter((i) => !dead.has(i));
      c.brokers.get(r.pick(live))!.pause(r.chance(0.5) ? r.between(50, 500) : r.between(600, 3000));
    } else if (!transactions) {
      // DeleteRecords on a leader (up to its HW): followers that were down may have to rebuild.
      const key = `t-${r.int(c.config.partitions)}`;
      const leader = c.brokers.get(c.leaderOf(key));
      const log = leader?.alive ? leader.logs.get(key) : undefined;
      if (log && log.highWatermark > log.logStartOffset) {
        const span = Number(log.highWatermark - log.logStartOffset);
        const to = r.chance(0.5) ? log.highWatermark : log.logStartOffset + BigInt(r.between(1, span));
        log.maybeIncrementLogStartOffset(to, 'delete records');
        log.deleteOldSegments();
      }
    }
  }
  // Faults stop: everyone back, links healed, no loss; writes go on for a while, then stop.
  c.net.healAll();
  c.net.config.dropRate = 0;
  c.net.config.stallRate = 0;
  for (const id of dead) c.brokers.get(id)!.start();
  await c.run(5000);
  c.stopProducing();
  txn?.stop();
  await c.run(4000);
  // The last transaction's markers are written, and read_committed consumers reach them.
  for (let waited = 0; txn?.busy === true && waited < 10_000; waited += 100) await c.run(100);
  if (txn !== null) await c.run(1000);
  c.stopConsuming();
  txn?.stopConsuming();
  c.checkConverged();
  txn?.checkCommittedRead();
  return { c, txn };
}
