/**
 * Free TCP ports on 127.0.0.1 for brokers whose ports nobody chose (startCluster, tests). They are
 * taken below the kernel's ephemeral range: a stopped broker's port must not become some client
 * connection's local port before the broker starts again (EADDRINUSE on restart). A probed port
 * can still be taken by another process before the broker binds it; callers retry on that.
 */
import { readFileSync } from 'node:fs';
import * as net from 'node:net';

/** The lowest port handed out. */
const LOWEST = 20_000;

export function portFree(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.once('error', () => resolve(false));
    s.listen(port, host, () => s.close(() => resolve(true)));
  });
}

/** True when something accepts connections on host:port (a broker that is up, a port still held). */
export function listening(port: number, host = '127.0.0.1'): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host, port }, () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}

/** The first port of the kernel's ephemeral range (Linux's default 32768 where it cannot be read). */
export function ephemeralStart(): number {
  try {
    const first = Number(
      readFileSync('/proc/sys/net/ipv4/ip_local_port_range', 'utf8').trim().split(/\s+/)[0],
    );
    return Number.isInteger(first) && first > LOWEST + 1_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/** The first of `count` consecutive ports that were free when probed, below the ephemeral range. */
export async function freePorts(count: number): Promise<number> {
  const span = Math.max(1_000, ephemeralStart() - LOWEST - count);
  for (let attempt = 0; attempt < 50; attempt++) {
    const base = LOWEST + Math.floor(Math.random() * span);
    let ok = true;
    for (let p = base; p < base + count && ok; p++) ok = await portFree(p);
    if (ok) return base;
  }
  throw new Error(`no ${count} consecutive free ports found below ${LOWEST + span + count}`);
}

export function freePort(): Promise<number> {
  return freePorts(1);
}
