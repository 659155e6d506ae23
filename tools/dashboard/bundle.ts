/**
 * Bundles the live dashboard's page (src/dashboard/web: Preact, uPlot) with esbuild into
 * dist/dashboard/app.js and app.css, which the launcher serves (src/dashboard/server.ts). Run by
 * `npm run build`, `npm test` and `prepare`, after tsc; nothing is fetched at run time.
 */
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'esbuild';

/** The repository root, from dist/tools/dashboard/bundle.js. */
const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const WEB = path.join(ROOT, 'src/dashboard/web');
/** dist/dashboard of the dist this script was compiled into (src/dashboard/server.ts looks there). */
const OUT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dashboard');

await build({
  entryPoints: { app: path.join(WEB, 'app.tsx') },
  bundle: true,
  format: 'esm',
  target: 'es2022',
  minify: true,
  sourcemap: true,
  jsx: 'automatic',
  jsxImportSource: 'preact',
  tsconfig: path.join(WEB, 'tsconfig.json'),
  outdir: OUT,
  logLevel: 'warning',
});
await build({
  entryPoints: { app: path.join(WEB, 'app.css') },
  bundle: true,
  minify: true,
  outdir: OUT,
  logLevel: 'warning',
});
