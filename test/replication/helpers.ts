import type { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import type { PartitionState } from '../../src/metadata/cluster-metadata.js';
import type {
  AlterPartitionOutcome,
  IsrProposal,
  LeaderContext,
} from '../../src/replication/leader-state.js';
import { Log } from '../../src/storage/log.js';
import { logConfig } from '../../src/storage/log-config.js';
import { type TestContext, tempDir, testContext } from '../storage/helpers.js';

export function openLog(dir: string, ctx: TestContext, segmentBytes = 1024 * 1024): Log {
  return Log.open({
    dir,
    topic: 't',
    partition: 0,
    config: logConfig({ segmentBytes, fileDeleteDelayMs: 60_000 }),
    ctx,
    hadCleanShutdown: true,
  });
}

export function state(over: Partial<PartitionState> = {}): PartitionState {
  return {
    topic: 't',
    partition: 0,
    leader: 1,
    leaderEpoch: 0,
    partitionEpoch: 0,
    replicas: [1, 2, 3],
    isr: [1, 2, 3],
    addingReplicas: [],
    removingReplicas: [],
    ...over,
  };
}

/** A leader context whose AlterPartition proposals wait in `proposals` until the test answers. */
export interface TestLeaderContext extends LeaderContext {
  readonly clock: ManualClock;
  readonly logger: MemoryLogger;
  readonly proposals: { proposal: IsrProposal; answer: (o: AlterPartitionOutcome) => void }[];
  lagMs: number;
  minIsr: number;
  readonly ineligible: Set<number>;
}

export function leaderContext(clock: ManualClock, logger = new MemoryLogger()): TestLeaderContext {
  const ctx: TestLeaderContext = {
    localBrokerId: 1,
    clock,
    logger,
    proposals: [],
    lagMs: 30_000,
    minIsr: 2,
    ineligible: new Set(),
    replicaLagTimeMaxMs: () => ctx.lagMs,
    minInsyncReplicas: () => ctx.minIsr,
    isReplicaIsrEligible: (id) => !ctx.ineligible.has(id),
    alterPartition: (proposal) =>
      new Promise((resolve) => {
        ctx.proposals.push({ proposal, answer: resolve });
      }),
  };
  return ctx;
}

/** Lets promise callbacks (AlterPartition answers) run. */
export function settle(): Promise<void> {
  return new Promise((resolve) => setImmediate(resolve));
}

export { tempDir, testContext };
