/**
 * What a test looks at to prove nothing was left behind: live processes whose command line (or
 * title: brokers are `skiff broker <id> <log dir>`) names a path. Whether a port still listens is
 * listening() in src/cluster/free-port.ts.
 */
import { readdirSync, readFileSync } from 'node:fs';

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
