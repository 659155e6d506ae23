import * as fs from 'node:fs';

/** A process's resident memory (VmRSS in /proc/<pid>/status), in bytes. */
export function residentBytes(pid: number): number {
  const m = /^VmRSS:\s+(\d+) kB$/m.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  if (m === null) throw new Error(`no VmRSS for process ${pid}`);
  return Number(m[1]) * 1024;
}

/** This process's hard limit on open descriptors (`ulimit -Hn`); Infinity when unlimited. */
export function hardDescriptorLimit(): number {
  const m = /^Max open files\s+\S+\s+(\d+|unlimited)/m.exec(fs.readFileSync('/proc/self/limits', 'utf8'));
  if (m === null) throw new Error('no "Max open files" in /proc/self/limits');
  return m[1] === 'unlimited' ? Number.POSITIVE_INFINITY : Number(m[1]);
}
