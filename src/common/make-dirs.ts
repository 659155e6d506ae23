import { mkdirSync, statSync } from 'node:fs';
import * as path from 'node:path';

/**
 * `mkdir -p` that fails instead of hanging: Node's recursive mkdirSync loops forever where mkdir
 * answers ENOENT although the parent exists (`/proc/x`: procfs refuses new entries), which made
 * `skiff up --data-dir /proc/x` and a broker with such a log dir spin at full CPU. One level at a
 * time from the root; the error names the directory that could not be made and why.
 */
export function makeDirectories(dir: string): void {
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
      throw new Error(`cannot create the directory ${at}: ${why}`);
    }
  }
}
