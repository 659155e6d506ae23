import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { tlsServerSettings } from '../src/security/tls.js';
import { makeTestCerts } from '../test/support/tls-certs.js';
import { recordsFile } from './baseline.js';
import { cpuSeconds, createTopic, produceArgs, runKcat, startBroker } from './broker.js';
import { KafkaSink } from './kafka-sink.js';

/**
 * TLS against plain text on the same broker, in one run (issue 21's yardstick: a secured listener
 * keeps >= 0.7x the plain one's produce throughput): one `skiff broker` with a PLAINTEXT and an
 * SSL listener (PEM, a CA made with openssl), kcat producing 100,000 x 1 KiB records (acks=1) to a
 * topic of its own through each, then reading them back; best of two runs each, alternated so
 * that what else the machine does weighs on both. Beside them: the broker's CPU seconds during each
 * run, and kcat producing through TLS to a sink that stores nothing (bench/kafka-sink.ts over the
 * same TLS listener code): the most any broker could reach with this client over TLS here. kcat
 * or openssl missing: says so and skips.
 */
const RECORDS = 100_000;
const RECORD_BYTES = 1024;
const TARGET = 0.7;

export async function benchTls(): Promise<void> {
  console.log('tls: SSL listener against PLAINTEXT on one broker');
  for (const tool of ['kcat', 'openssl']) {
    if (spawnSync(tool, [tool === 'kcat' ? '-V' : 'version']).error) {
      console.log(`  ${tool} is not installed: skipped`);
      return;
    }
  }
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-tls-'));
  const certs = makeTestCerts();
  try {
    const input = path.join(dir, 'records.txt');
    recordsFile(input, RECORDS, RECORD_BYTES);
    const broker = await startBroker(dir, [
      'listeners=PLAINTEXT://127.0.0.1:0,SSL://127.0.0.1:0',
      'ssl.keystore.type=PEM',
      `ssl.keystore.location=${certs.brokerKeystore}`,
    ]);
    try {
      const sslPort = Number(/SSL:\/\/127\.0\.0\.1:(\d+)/.exec(broker.output)?.[1]);
      const plain = `127.0.0.1:${broker.port}`;
      const tls = ['-X', 'security.protocol=ssl', '-X', `ssl.ca.location=${certs.caPem}`];
      const pid = broker.child.pid!;
      // Wall seconds of a kcat run and the broker's CPU seconds during it.
      const timed = async (args: string[]): Promise<[number, number]> => {
        const cpu = cpuSeconds(pid);
        const seconds = await runKcat(args, null);
        return [seconds, cpuSeconds(pid) - cpu];
      };
      const runs = {
        PLAINTEXT: { produce: [] as [number, number][], consume: [] as [number, number][] },
        SSL: { produce: [] as [number, number][], consume: [] as [number, number][] },
      };
      for (let round = 0; round < 2; round++) {
        for (const name of ['PLAINTEXT', 'SSL'] as const) {
          const bootstrap = name === 'SSL' ? `127.0.0.1:${sslPort}` : plain;
          const extra = name === 'SSL' ? tls : [];
          const topic = `bench-${name.toLowerCase()}-${round}`;
          createTopic(plain, topic);
          runs[name].produce.push(await timed([...produceArgs(bootstrap, topic, input), ...extra]));
          runs[name].consume.push(
            await timed([
              '-C',
              '-b',
              bootstrap,
              '-t',
              topic,
              '-o',
              'beginning',
              '-c',
              String(RECORDS),
              '-q',
              ...extra,
            ]),
          );
        }
      }
      const mbps = (seconds: number) => (RECORDS * RECORD_BYTES) / 1e6 / seconds;
      // Diagnostic: kcat through TLS to a sink that stores nothing (bench/kafka-sink.ts), best of two:
      // what this client reaches over TLS here, the most any broker could.
      const sink = await KafkaSink.start(
        [],
        tlsServerSettings(
          (name) => ({ 'ssl.keystore.type': 'PEM', 'ssl.keystore.location': certs.brokerKeystore })[name],
          (f) => fs.readFileSync(f),
        ),
      );
      let sinkSeconds = Number.POSITIVE_INFINITY;
      try {
        for (let round = 0; round < 2; round++)
          sinkSeconds = Math.min(
            sinkSeconds,
            await runKcat([...produceArgs(sink.bootstrap, 'sink', input), ...tls], null),
          );
      } finally {
        await sink.close();
      }
      for (const what of ['produce', 'consume'] as const) {
        const best = (r: [number, number][]) => r.reduce((a, b) => (b[0] < a[0] ? b : a));
        const [pSeconds, pCpu] = best(runs.PLAINTEXT[what]);
        const [sSeconds, sCpu] = best(runs.SSL[what]);
        const p = mbps(pSeconds);
        const s = mbps(sSeconds);
        console.log(
          `  ${what} ${RECORDS} x ${RECORD_BYTES} B: PLAINTEXT ${p.toFixed(0)} MB/s, SSL ${s.toFixed(0)} MB/s = ` +
            `${(s / p).toFixed(2)}x (target >= ${TARGET}x: ${s / p >= TARGET ? 'met' : 'NOT met'}); ` +
            `broker CPU ${pCpu.toFixed(2)} s and ${sCpu.toFixed(2)} s`,
        );
        if (what === 'produce')
          console.log(
            `    ceiling: kcat through TLS to a sink that stores nothing: ${mbps(sinkSeconds).toFixed(0)} MB/s`,
          );
      }
    } finally {
      await broker.stop();
    }
  } finally {
    certs.remove();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}
