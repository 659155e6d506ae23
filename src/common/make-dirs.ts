import { mkdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

/** What an operator reads for the errors a data dir meets (strerror's words). */
const ERRNO_TEXT: Readonly<Record<string, string>> = {
  EACCES: 'permission denied',
  EPERM: 'operation not permitted',
  EROFS: 'read-only file system',
  ENOSPC: 'no space left on device',
  ENOENT: 'no such file or directory',
};

/**
 * `mkdir -p` that fails instead of hanging: Node's recursive mkdirSync loops forever where mkdir
 * answers ENOENT although the parent exists (`/proc/x`: procfs refuses new entries), which made
 * `skiff up --data-dir /proc/x` and a broker with such a log dir spin at full CPU. One level at a
 * time from the root; the error names the directory that could not be made and why.
 */
export function makeDirectories(dir: string): void {
  // Most calls find the directory there (every partition's, at each start-up): one stat, not a
  // failed mkdir and a stat per level with an exception each.
  if (statSync(dir, { throwIfNoEntry: false })?.isDirectory() === true) return;
  let at = path.parse(path.resolve(dir)).root;
  for (const part of path.resolve(dir).slice(at.length).split(path.sep)) {
    if (part === '') continue;
    at = path.join(at, part);
    try {
      mkdirSync(at);
    } catch (e) {
      const code = (e as NodeJS.ErrnoException).code;
      if (code === 'EEXIST' && statSync(at).isDirectory()) continue;
      const why = code === 'EEXIST' ? 'it exists and is not a directory' : (code ?? (e as Error).message);
      const what = code === undefined ? undefined : ERRNO_TEXT[code];
      throw new Error(`cannot create the directory ${at}: ${what === undefined ? why : `${code} (${what})`}`);
    }
  }
}
