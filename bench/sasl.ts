import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { freePort } from '../src/cluster/free-port.js';
import { ClientConnection } from '../src/network/client-connection.js';
import { type Broker, startBroker } from './broker.js';

/**
 * SCRAM authentication cost (issue 21's target: 100 connections ≤ 2 s): a `skiff broker` with a
 * SASL_PLAINTEXT listener and a SCRAM-SHA-256 and a SCRAM-SHA-512 user made by --add-scram (4096
 * iterations, Kafka's minimum); 100 connections one after the other, each connecting and running
 * SaslHandshake + SaslAuthenticate to completion, then 100 at once. Beside them, the same count of
 * bare PLAINTEXT connections (the baseline: what connecting costs without SASL). The client's own
 * PBKDF2 is part of each authentication, as it is for any client.
 */
const CONNECTIONS = 100;
const TARGET_MS = 2000;

async function startSaslBroker(dir: string): Promise<{ plain: number; sasl: number; broker: Broker }> {
  const [plain, sasl] = [await freePort(), await freePort()];
  const scram = ['SCRAM-SHA-256', 'SCRAM-SHA-512'].flatMap((m) => [
    '--add-scram',
    `${m}=[name=bench,password=bench-secret]`,
  ]);
  const broker = await startBroker(
    dir,
    [
      `listeners=PLAINTEXT://127.0.0.1:${plain},SASL_PLAINTEXT://127.0.0.1:${sasl}`,
      'sasl.enabled.mechanisms=SCRAM-SHA-256,SCRAM-SHA-512',
    ],
    scram,
  );
  return { plain, sasl, broker };
}

async function connect(port: number, mechanism: string | null): Promise<void> {
  const c = await ClientConnection.connect('127.0.0.1', port, {
    clientId: 'bench-sasl',
    ...(mechanism !== null && { sasl: { mechanism, username: 'bench', password: 'bench-secret' } }),
  });
  c.close();
}

async function timed(run: () => Promise<unknown>): Promise<number> {
  const start = performance.now();
  await run();
  return performance.now() - start;
}

export async function benchSasl(): Promise<void> {
  console.log(`sasl: ${CONNECTIONS} SCRAM authentications against one skiff broker`);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-bench-sasl-'));
  const broker = await startSaslBroker(dir);
  try {
    await connect(broker.sasl, 'SCRAM-SHA-256'); // warm-up
    const serial = async (port: number, mechanism: string | null) => {
      for (let i = 0; i < CONNECTIONS; i++) await connect(port, mechanism);
    };
    const parallel = (port: number, mechanism: string | null) =>
      Promise.all(Array.from({ length: CONNECTIONS }, () => connect(port, mechanism)));
    const baseline = await timed(() => serial(broker.plain, null));
    console.log(
      `  baseline: ${CONNECTIONS} PLAINTEXT connections one after the other: ${baseline.toFixed(0)} ms`,
    );
    for (const mechanism of ['SCRAM-SHA-256', 'SCRAM-SHA-512']) {
      const one = await timed(() => serial(broker.sasl, mechanism));
      const all = await timed(() => parallel(broker.sasl, mechanism));
      const verdict = (ms: number) => (ms <= TARGET_MS ? 'met' : 'NOT met');
      console.log(
        `  ${mechanism}: ${CONNECTIONS} one after the other ${one.toFixed(0)} ms (${(one / CONNECTIONS).toFixed(1)} ms each, target <= ${TARGET_MS} ms: ${verdict(one)}); ` +
          `${CONNECTIONS} at once ${all.toFixed(0)} ms (${verdict(all)})`,
      );
    }
  } finally {
    await broker.broker.stop();
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await benchSasl();
