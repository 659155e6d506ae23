import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import * as fs from 'node:fs';

/** What the broker and replication benches share: dd's baseline and kcat's input file. */

/**
 * dd's sequential write speed in MB/s (bs=1M count=256 conv=fdatasync) into `file`, which is
 * removed afterwards: the baseline the throughput targets are ratios to.
 */
export function ddMBps(file: string): number {
  const r = spawnSync('dd', ['if=/dev/zero', `of=${file}`, 'bs=1M', 'count=256', 'conv=fdatasync'], {
    encoding: 'utf8',
  });
  fs.rmSync(file, { force: true });
  // "268435456 bytes (268 MB, 256 MiB) copied, 0.7 s, 383 MB/s"
  const m = /(\d+) bytes.*copied, ([\d.,]+) s/.exec(r.stderr);
  if (r.status !== 0 || !m) throw new Error(`dd failed: ${r.stderr}`);
  return Number(m[1]) / 1e6 / Number(m[2].replace(',', '.'));
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
