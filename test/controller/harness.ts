import { ManualClock } from '../../src/common/clock.js';
import { MemoryLogger } from '../../src/common/logger.js';
import { ManualScheduler } from '../../src/common/scheduler.js';
import { Controller, type ControllerOptions } from '../../src/controller/controller.js';
import type { MetadataImage, PartitionState } from '../../src/metadata/cluster-metadata.js';
import { EmbeddedStore } from '../../src/metadata/embedded-store.js';
import { StoreClusterMetadata } from '../../src/metadata/store-cluster-metadata.js';

/** A deterministic source of integers (xorshift), so assignments replay. */
export function seededRandom(seed: number): { int: (n: number) => number; bytes: (n: number) => Buffer } {
  let s = seed >>> 0 || 1;
  const next = (): number => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
  return {
    int: (n) => next() % n,
    bytes: (n) => {
      const b = Buffer.alloc(n);
      for (let i = 0; i < n; i++) b[i] = next() & 0xff;
      return b;
    },
  };
}

/**
 * A cluster in one process on simulated time: an embedded store, brokers (StoreClusterMetadata)
 * and controllers on a ManualClock. Time moves only through advance(); work runs in settle().
 */
export class TestCluster {
  readonly scheduler: ManualScheduler;
  readonly logger = new MemoryLogger();
  readonly brokers = new Map<number, StoreClusterMetadata>();
  readonly controllers: Controller[] = [];
  /** Schedulers of components that must be paused on their own (a stalled controller). */
  readonly extraSchedulers: ManualScheduler[] = [];
  readonly paused = new Set<ManualScheduler>();
  private readonly random = seededRandom(42);

  private constructor(
    readonly store: EmbeddedStore,
    readonly clock: ManualClock,
  ) {
    this.scheduler = new ManualScheduler(clock);
  }

  /** `dataDir`: persist the store there (snapshot + fsynced journal) instead of memory only. */
  static async create(dataDir?: string): Promise<TestCluster> {
    const clock = new ManualClock();
    return new TestCluster(
      await EmbeddedStore.open({ clock, ...(dataDir === undefined ? {} : { dataDir }) }),
      clock,
    );
  }

  /** `ready` false leaves the broker registered but fenced (a broker still loading its logs). */
  async startBroker(id: number, rack: string | null = null, ready = true): Promise<StoreClusterMetadata> {
    const b = await StoreClusterMetadata.start({
      store: this.store,
      clusterId: 'test',
      broker: { id, host: '127.0.0.1', port: 9091 + id, rack },
      scheduler: this.scheduler,
      logger: this.logger,
      randomBytes: this.random.bytes,
      requestTimeoutMs: 5000,
    });
    // A broker in these tests is ready at once (no logs to load, nothing to listen on).
    if (ready) await b.unfence();
    this.brokers.set(id, b);
    return b;
  }

  async startController(nodeId: number, extra: Partial<ControllerOptions> = {}): Promise<Controller> {
    const c = new Controller({
      store: this.store,
      clusterId: 'test',
      nodeId,
      clock: this.clock,
      scheduler: this.scheduler,
      logger: this.logger,
      randomInt: this.random.int,
      randomBytes: this.random.bytes,
      ...extra,
    });
    await c.start();
    this.controllers.push(c);
    return c;
  }

  /** Lets queued promise chains run to quiescence (no time passes). */
  async settle(rounds = 30): Promise<void> {
    for (let i = 0; i < rounds; i++) {
      await new Promise((r) => setImmediate(r));
      this.runTimers();
    }
  }

  /** Moves time in steps, running due timers (heartbeats, lease checks) at each step. */
  async advance(ms: number, stepMs = 250): Promise<void> {
    for (let done = 0; done < ms; done += stepMs) {
      this.clock.advance(Math.min(stepMs, ms - done));
      this.store.checkLeases();
      this.runTimers();
      await this.settle(5);
    }
    await this.settle();
  }

  private runTimers(): void {
    this.scheduler.runDue();
    for (const s of this.extraSchedulers) if (!this.paused.has(s)) s.runDue();
  }

  image(): MetadataImage {
    return this.brokers.values().next().value!.image();
  }

  partition(topic: string, p: number, via?: number): PartitionState {
    const image = via === undefined ? this.image() : this.brokers.get(via)!.image();
    const t = image.topics.get(topic);
    if (t === undefined) throw new Error(`no topic ${topic}`);
    return t.partitions[p]!;
  }

  async close(): Promise<void> {
    for (const c of this.controllers) await c.stop().catch(() => {});
    for (const b of this.brokers.values()) await b.close().catch(() => {});
    await this.store.close();
  }
}
