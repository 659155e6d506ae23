/** `skiff producer-perf-test`: Kafka's kafka-producer-perf-test, its progress lines and summary. */

import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';
import { ClientError } from '../../client/errors.js';
import { Producer } from '../../client/producer.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { LIMITS } from '../../common/limits.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ClientProps, producerOptionsFrom } from './client-props.js';
import {
  openClient,
  parseKeyValues,
  readPropertiesFile,
  runTool,
  type ToolDef,
  UsageError,
} from './common.js';
import { fixed } from './perf-format.js';

export const PRODUCER_PERF_TEST: ToolDef = {
  ...commandInfo('producer-perf-test'),
  usage: [
    'Usage: skiff producer-perf-test --topic <topic> --num-records <n> (--record-size <bytes> | --payload-file <file>)',
    '         --throughput <records/s, -1 unthrottled> (--producer-props k=v ... | --producer.config <file>)',
  ],
  flags: [
    { name: 'topic', arg: 'topic', help: 'REQUIRED: the topic to produce to' },
    { name: 'num-records', arg: 'n', help: 'REQUIRED: records to send' },
    { name: 'record-size', arg: 'bytes', help: 'size of each random record' },
    { name: 'payload-file', arg: 'file', help: 'send records taken at random from this file' },
    { name: 'payload-delimiter', arg: 'delim', help: 'record delimiter in --payload-file (default \\n)' },
    { name: 'payload-monotonic', help: 'payloads are the record numbers 0, 1, 2, ...' },
    { name: 'throughput', arg: 'records/s', help: 'REQUIRED: throttle to this rate; -1 for no throttle' },
    {
      name: 'producer-props',
      arg: 'k=v ...',
      many: true,
      help: 'producer settings, e.g. bootstrap.servers=h:9092 acks=all enable.idempotence=false; names the producer does not use are named in a warning',
    },
    { name: 'producer.config', arg: 'file', help: 'properties file of producer settings' },
    { name: 'bootstrap-server', arg: 'host:port', help: 'the broker(s); overrides bootstrap.servers' },
    {
      name: 'warmup-records',
      arg: 'n',
      help: 'the first n records are warm-up: left out of a second, steady-state summary line',
    },
    { name: 'print-metrics', help: 'accepted for compatibility; prints nothing more' },
  ],
};

const REPORTING_INTERVAL_MS = 5000;

/**
 * Kafka's Stats: a window line every reporting interval and the summary line at the end. With
 * --warmup-records a second, steady-state Stats takes over the window lines once the warm-up
 * records are sent, and adds its own summary line after the whole run's.
 */
export class PerfStats {
  private printWindows = true;
  private readonly latencies: number[] = [];
  private readonly sampling: number;
  private iteration = 0;
  private count = 0;
  private bytes = 0;
  private maxLatency = 0;
  private totalLatency = 0;
  private windowCount = 0;
  private windowMaxLatency = 0;
  private windowTotalLatency = 0;
  private windowBytes = 0;
  private windowStart: number;

  constructor(
    numRecords: number,
    private readonly startMs: number,
    private readonly print: (line: string) => void,
    private readonly reportingIntervalMs = REPORTING_INTERVAL_MS,
    private readonly steadyState = false,
  ) {
    this.sampling = Math.max(1, Math.floor(numRecords / Math.min(numRecords, LIMITS.perfLatencySamples)));
    this.windowStart = startMs;
  }

  record(latencyMs: number, bytes: number, nowMs: number): void {
    this.count++;
    this.bytes += bytes;
    this.totalLatency += latencyMs;
    this.maxLatency = Math.max(this.maxLatency, latencyMs);
    this.windowCount++;
    this.windowBytes += bytes;
    this.windowTotalLatency += latencyMs;
    this.windowMaxLatency = Math.max(this.windowMaxLatency, latencyMs);
    if (this.iteration % this.sampling === 0) this.latencies.push(latencyMs);
    this.iteration++;
    if (nowMs - this.windowStart >= this.reportingIntervalMs) {
      if (this.steadyState && this.count === this.windowCount) this.print('In steady state.');
      if (this.printWindows) this.printWindow(nowMs);
      this.windowStart = nowMs;
      this.windowCount = 0;
      this.windowMaxLatency = 0;
      this.windowTotalLatency = 0;
      this.windowBytes = 0;
    }
  }

  /** The steady-state Stats prints the window lines from now on. */
  suppressPrinting(): void {
    this.printWindows = false;
  }

  private printWindow(nowMs: number): void {
    const elapsed = nowMs - this.windowStart;
    const recsPerSec = (1000 * this.windowCount) / elapsed;
    const mbPerSec = (1000 * this.windowBytes) / elapsed / (1024 * 1024);
    this.print(
      `${this.windowCount} records sent, ${fixed(recsPerSec, 1)} records/sec (${fixed(mbPerSec, 2)} MB/sec), ${fixed(this.windowTotalLatency / this.windowCount, 1)} ms avg latency, ${fixed(this.windowMaxLatency, 1)} ms max latency.`,
    );
  }

  printTotal(nowMs: number): void {
    const elapsed = nowMs - this.startMs;
    const recsPerSec = (1000 * this.count) / elapsed;
    const mbPerSec = (1000 * this.bytes) / elapsed / (1024 * 1024);
    const sorted = [...this.latencies].sort((a, b) => a - b);
    const pct = (p: number) => sorted[Math.floor(p * sorted.length)] ?? 0;
    this.print(
      `${this.count}${this.steadyState ? ' steady state' : ''} records sent, ${fixed(recsPerSec, 1)} records/sec (${fixed(mbPerSec, 2)} MB/sec), ${fixed(this.totalLatency / this.count, 2)} ms avg latency, ${fixed(this.maxLatency, 2)} ms max latency, ${pct(0.5)} ms 50th, ${pct(0.95)} ms 95th, ${pct(0.99)} ms 99th, ${pct(0.999)} ms 99.9th.`,
    );
  }
}

type PayloadSource = (i: number) => Buffer;

function payloads(
  recordSize: number | undefined,
  file: string | undefined,
  delimiter: string,
  monotonic: boolean,
  fill: (b: Buffer) => void,
): PayloadSource {
  const given = [recordSize !== undefined, file !== undefined, monotonic].filter(Boolean).length;
  if (given !== 1)
    throw new UsageError('give exactly one of --record-size, --payload-file, --payload-monotonic');
  if (recordSize !== undefined) {
    if (recordSize <= 0) throw new UsageError('--record-size should be greater than zero');
    // Random uppercase letters, a fresh payload per record, as Kafka's tool sends.
    return () => {
      const b = Buffer.allocUnsafe(recordSize);
      fill(b);
      return b;
    };
  }
  if (file !== undefined) {
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new ClientError(
        `cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
    const list = text
      .split(delimiter)
      .filter((s) => s !== '')
      .map((s) => Buffer.from(s, 'utf8'));
    if (list.length === 0) throw new ClientError(`File is empty: ${file}`);
    return () => list[Math.floor(Math.random() * list.length)]!;
  }
  return (i) => Buffer.from(String(i), 'utf8');
}

/**
 * Fills a buffer with uniformly random uppercase letters from xorshift32 seeded once from the system
 * RNG: as Kafka's tool (SplittableRandom.nextInt(26) per byte), a statistical generator. At 10 MB/s
 * of payload crypto.randomFillSync cost the tool ~8 ms of CPU per MB, taken from the brokers it
 * measures on a small machine.
 */
export function randomLetters(): (b: Buffer) => void {
  let x = randomBytes(4).readUInt32LE(0) || 0x9e3779b9;
  return (b) => {
    for (let j = 0; j < b.length; j += 2) {
      x ^= x << 13;
      x ^= x >>> 17;
      x ^= x << 5;
      // Two letters a step, each the top bits of a 16-bit half times 26 (no division).
      b[j] = 65 + (((x >>> 16) * 26) >>> 16);
      if (j + 1 < b.length) b[j + 1] = 65 + (((x & 0xffff) * 26) >>> 16);
    }
  };
}

export function runProducerPerfTest(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
  fill: (b: Buffer) => void = randomLetters(),
): Promise<number> {
  return runTool(PRODUCER_PERF_TEST, args, io, async (flags) => {
    if (flags.has('transactional-id')) throw new UsageError('transactions are not supported');
    const topic = flags.require('topic');
    const numRecords = flags.int('num-records');
    if (numRecords === undefined) throw new UsageError('missing required argument --num-records');
    if (numRecords <= 0) throw new UsageError('--num-records should be greater than zero');
    // Kafka: a negative count means none; one that leaves no steady state is refused.
    const warmupRecords = Math.max(flags.int('warmup-records') ?? 0, 0);
    if (warmupRecords >= numRecords) {
      throw new UsageError(
        'The value for --warmup-records must be strictly fewer than the number of records in the test, --num-records.',
      );
    }
    const throughput = flags.number('throughput');
    if (throughput === undefined) throw new UsageError('missing required argument --throughput');
    if (!flags.has('producer-props') && !flags.has('producer.config') && !flags.has('bootstrap-server')) {
      throw new UsageError('Either --producer-props or --producer.config must be specified.');
    }
    const delimiter = (flags.get('payload-delimiter') ?? '\\n').replaceAll('\\n', '\n');
    const payload = payloads(
      flags.int('record-size'),
      flags.get('payload-file'),
      delimiter,
      flags.has('payload-monotonic'),
      fill,
    );
    const props = new ClientProps();
    const file = flags.get('producer.config');
    if (file !== undefined) for (const [k, v] of readPropertiesFile(file)) props.set(k, v);
    for (const [k, v] of parseKeyValues(flags.all('producer-props'), '--producer-props')) props.set(k, v);
    const fromProps = props.get('bootstrap.servers');
    const bootstrap = flags.get('bootstrap-server') ?? fromProps;
    if (bootstrap === undefined)
      throw new UsageError('no bootstrap.servers in --producer-props and no --bootstrap-server');
    const options = producerOptionsFrom(props);
    const client = openClient('producer-perf-test', bootstrap, runtime, props);
    const producer = new Producer(client, options);
    const unused = props.unusedWarning();
    if (unused !== null) io.err(`skiff producer-perf-test: ${unused}`);
    const { clock } = runtime;
    let failure: Error | null = null;
    try {
      // Fail on a missing topic before the clock starts, not as 'N records sent' of errors.
      await producer.partitionsFor(topic);
      if (warmupRecords > 0) {
        io.out(
          `Warmup first ${warmupRecords} records. Steady state results will print after the complete test summary.`,
        );
      }
      const startMs = clock.nowMs();
      const stats = new PerfStats(numRecords, startMs, io.out);
      let steady: PerfStats | null = null;
      for (let i = 0; i < numRecords && failure === null; i++) {
        const value = payload(i);
        const sendStartMs = clock.nowMs();
        if (warmupRecords > 0 && i === warmupRecords) {
          steady = new PerfStats(
            numRecords - warmupRecords,
            sendStartMs,
            io.out,
            REPORTING_INTERVAL_MS,
            true,
          );
          stats.suppressPrinting();
        }
        const steadyStats = steady;
        await producer.send({ topic, key: null, value }, (e) => {
          if (e) failure ??= e;
          else {
            const now = clock.nowMs();
            stats.record(now - sendStartMs, value.length, now);
            steadyStats?.record(now - sendStartMs, value.length, now);
          }
        });
        if (throughput > 0) {
          // Kafka's ThroughputThrottler: sleep off the lead over the target rate once it is worth it.
          const aheadMs = startMs + ((i + 1) * 1000) / throughput - clock.nowMs();
          if (aheadMs >= 2) await runtime.sleep(aheadMs);
        }
      }
      await producer.flush();
      if (failure) throw failure;
      stats.printTotal(clock.nowMs());
      steady?.printTotal(clock.nowMs());
      return 0;
    } finally {
      client.close();
    }
  });
}
