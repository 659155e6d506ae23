import { type ChildProcess, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';

/** What the broker and replication benches share: dd's baseline and kcat's input file. */

/**
 * dd's sequential write speed in MB/s (bs=1M count=256 conv=fdatasync) into `file`, which is
 * removed afterwards unless `keep` (then the caller removes it when the measured part is done):
 * the baseline the throughput targets are ratios to.
 *
 * Measure it right before the part it is the baseline of, and keep the file until that part is
 * done. On a VM whose host backs guest memory lazily and takes freed memory back (free page
 * reporting, as on the machines this project runs on), a write into a page-cache page the guest
 * has not used recently pays a host fault per 4 KiB: buffered writes run at ~0.4 GB/s instead of
 * ~6 GB/s, and dd's result here swung from 230 to 1300 MB/s with how much memory had been freed in
 * the seconds before. Removing dd's file at once would hand the measured part 256 MB of warm pages
 * that dd itself did not have.
 */
export function ddMBps(file: string, options: { keep?: boolean } = {}): number {
  return dd(file, options).mbps;
}

/**
 * ddMBps with dd's system CPU seconds beside it: on such a VM it tells warm memory (~0.05 s for
 * the 256 MB) from cold (~0.6 s, the host faults), so a reader sees which a baseline met.
 */
export function dd(file: string, options: { keep?: boolean } = {}): { mbps: number; systemSeconds: number } {
  const before = childrenSystemSeconds();
  const r = spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', 'count=256', 'conv=fdatasync'], {
    encoding: 'utf8',
  });
  const systemSeconds = childrenSystemSeconds() - before;
  if (!options.keep) fs.rmSync(file, { force: true });
  // "268435456 bytes (268 MB, 256 MiB) copied, 0.7 s, 383 MB/s"
  const m = /(\d+) bytes.*copied, ([\d.,]+) s/.exec(r.stderr);
  if (r.status !== 0 || !m) throw new Error(`dd failed: ${r.stderr}`);
  return { mbps: Number(m[1]) / 1e6 / Number(m[2].replace(',', '.')), systemSeconds };
}

/** System CPU of this process's waited-for children so far (cstime in /proc/self/stat), in seconds. */
function childrenSystemSeconds(): number {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  return Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[14]) / 100;
}

/**
 * How the kernel gives guest memory back to the host, for the benches' header: the free page
 * reporting order from the kernel command line, or null when it is not set there.
 */
export function pageReporting(): string | null {
  try {
    const m = /page_reporting\.page_reporting_order=(\d+)/.exec(fs.readFileSync('/proc/cmdline', 'utf8'));
    return m ? `free page reporting of ${2 ** Number(m[1]) * 4} KiB blocks` : null;
  } catch {
    return null;
  }
}

const ALPHABET = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/';

/** `records` lines of `recordBytes` (newline included) of random base64 characters: `kcat -P -l`'s input. */
export function recordsFile(file: string, records: number, recordBytes: number): void {
  const fd = fs.openSync(file, 'w');
  try {
    const block = Buffer.allocUnsafe(recordBytes * 1000);
    for (let i = 0; i < records; i += 1000) {
      const n = Math.min(1000, records - i) * recordBytes;
      const rnd = randomBytes(n);
      for (let k = 0; k < n; k++)
        block[k] = k % recordBytes === recordBytes - 1 ? 0x0a : ALPHABET.charCodeAt(rnd[k]! & 63);
      fs.writeSync(fd, block, 0, n);
    }
  } finally {
    fs.closeSync(fd);
  }
}

/** The middle value (the mean of the two middle ones for an even count). */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  const mid = s.length >> 1;
  return s.length % 2 === 1 ? s[mid]! : (s[mid - 1]! + s[mid]!) / 2;
}

/** Whether this process may drop the page cache (root, and /proc/sys/vm/drop_caches writable). */
export function dropCachesPossible(): boolean {
  try {
    fs.accessSync('/proc/sys/vm/drop_caches', fs.constants.W_OK);
    return process.getuid?.() === 0;
  } catch {
    return false;
  }
}

/** Drops the page cache, dentries and inodes (sync first: dirty pages are not dropped). */
export function dropCaches(): void {
  fs.writeFileSync('/proc/sys/vm/drop_caches', '3');
}

/**
 * Waits until `child` (stdout and stderr piped) has printed `text`; rejects when it exits first or
 * after `timeoutMs`, with what it printed. Resolves with what it printed so far.
 */
export function untilPrinted(
  child: ChildProcess,
  text: string,
  what: string,
  timeoutMs = 15_000,
): Promise<string> {
  let out = '';
  return new Promise<string>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`${what} not ready in ${timeoutMs / 1000} s:\n${out}`)),
      timeoutMs,
    );
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      if (out.includes(text)) {
        clearTimeout(timer);
        resolve(out);
      }
    };
    child.stdout?.on('data', onData);
    child.stderr?.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited with ${code}:\n${out}`));
    });
  });
}

/** SIGTERM to `child` (SIGKILL after 10 s); resolves once it has exited. */
export async function stopChild(child: ChildProcess): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  child.kill('SIGTERM');
  const killer = setTimeout(() => child.kill('SIGKILL'), 10_000);
  await exited;
  clearTimeout(killer);
}
