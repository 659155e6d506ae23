/**
 * `node --import <this file>`: records every module the process loads, one URL a line, in the file
 * SKIFF_LOAD_LOG names — ES modules through a load hook (load-log-hooks.ts, run on Node's hooks
 * thread), CommonJS files (etcd3, grpc, ...) from require's cache at exit. For tests that a command
 * loads only what it uses.
 */
import * as fs from 'node:fs';
import { createRequire, register } from 'node:module';
import { pathToFileURL } from 'node:url';

register('./load-log-hooks.js', import.meta.url);

const require = createRequire(import.meta.url);
process.on('exit', () => {
  const log = process.env.SKIFF_LOAD_LOG;
  if (log === undefined) return;
  const cjs = Object.keys(require.cache).map((file) => `${pathToFileURL(file).href}\n`);
  fs.appendFileSync(log, cjs.join(''));
});
