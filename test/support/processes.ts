/**
 * What a test looks at to prove nothing was left behind: live processes whose command line (or
 * title: brokers are `skiff broker <id> <log dir>`) names a path, and whether a port still listens.
 */
import { readdirSync, readFileSync } from 'node:fs';
import * as net from 'node:net';

export interface ProcessLine {
  readonly pid: number;
  readonly cmdline: string;
}

/** Every live process whose command line contains `text` (Linux /proc). */
export function processesMentioning(text: string): ProcessLine[] {
  const out: ProcessLine[] = [];
  for (const entry of readdirSync('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    try {
      const cmdline = readFileSync(`/proc/${entry}/cmdline`, 'utf8').replaceAll('\0', ' ').trim();
      if (cmdline.includes(text)) out.push({ pid: Number(entry), cmdline });
    } catch {
      // Gone while being read.
    }
  }
  return out;
}

/** True when something accepts connections on 127.0.0.1:port. */
export function listening(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = net.connect({ host: '127.0.0.1', port });
    s.once('connect', () => {
      s.destroy();
      resolve(true);
    });
    s.once('error', () => resolve(false));
  });
}
