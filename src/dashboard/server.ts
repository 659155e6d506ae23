/**
 * The live dashboard's HTTP side, mounted on the launcher's control server (`skiff up --http-port H`:
 * the page at http://127.0.0.1:H/). GET / is the page, /dashboard/app.js and app.css its bundle
 * (built from src/dashboard/web by tools/dashboard/bundle.ts into dist/dashboard), /dashboard/events
 * a server-sent event stream of Snapshots, one per poll, and /dashboard/snapshot the latest as JSON.
 * The cluster is polled only while someone watches (a stream is open), at most once per interval.
 */
import * as fs from 'node:fs';
import type * as http from 'node:http';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Collector } from './collector.js';
import type { Snapshot } from './snapshot.js';

/** How often an open page gets a new Snapshot: the "within 2 s" with room for one slow poll. */
export const DASHBOARD_INTERVAL_MS = 1000;

/** Where the bundle is: dist/dashboard, beside dist/src (this file is dist/src/dashboard/server.js). */
const BUNDLE_DIR = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../dashboard');

const PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Skiff</title>
<meta name="viewport" content="width=device-width, initial-scale=1">
<link rel="stylesheet" href="/dashboard/app.css">
</head>
<body>
<div id="app">Connecting…</div>
<script type="module" src="/dashboard/app.js"></script>
</body>
</html>
`;

const ASSETS: Readonly<Record<string, string>> = {
  '/dashboard/app.js': 'text/javascript; charset=utf-8',
  '/dashboard/app.css': 'text/css; charset=utf-8',
};

export interface Dashboard {
  /** Answers the request if it is the dashboard's; false: not ours. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): boolean;
  close(): void;
}

export function createDashboard(
  collector: Collector,
  options: { intervalMs?: number; onError?: (e: Error) => void } = {},
): Dashboard {
  const intervalMs = options.intervalMs ?? DASHBOARD_INTERVAL_MS;
  const streams = new Set<http.ServerResponse>();
  let latest: Snapshot | null = null;
  let timer: NodeJS.Timeout | null = null;
  let polling = false;

  const tick = async (): Promise<void> => {
    if (polling) return;
    polling = true;
    try {
      latest = await collector.poll();
      const frame = `data: ${JSON.stringify(latest)}\n\n`;
      for (const s of streams) s.write(frame);
    } catch (e) {
      options.onError?.(e instanceof Error ? e : new Error(String(e)));
    } finally {
      polling = false;
    }
  };
  const watch = (): void => {
    if (timer !== null) return;
    void tick();
    timer = setInterval(() => void tick(), intervalMs);
    timer.unref();
  };
  const unwatch = (): void => {
    if (streams.size > 0 || timer === null) return;
    clearInterval(timer);
    timer = null;
  };

  return {
    handle(req, res) {
      if (req.method !== 'GET') return false;
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      if (url.pathname === '/') {
        res.writeHead(200, { 'content-type': 'text/html; charset=utf-8', 'cache-control': 'no-cache' });
        res.end(PAGE);
        return true;
      }
      const type = ASSETS[url.pathname];
      if (type !== undefined) {
        const file = path.join(BUNDLE_DIR, path.basename(url.pathname));
        fs.readFile(file, (err, body) => {
          if (err !== null) {
            res.writeHead(500, { 'content-type': 'text/plain' });
            res.end(`the dashboard bundle is missing (${file}): run npm run build\n`);
          } else {
            res.writeHead(200, { 'content-type': type, 'cache-control': 'no-cache' });
            res.end(body);
          }
        });
        return true;
      }
      if (url.pathname === '/dashboard/events') {
        res.writeHead(200, {
          'content-type': 'text/event-stream',
          'cache-control': 'no-cache',
          connection: 'keep-alive',
        });
        res.write(`retry: ${intervalMs}\n\n`);
        if (latest !== null) res.write(`data: ${JSON.stringify(latest)}\n\n`);
        streams.add(res);
        req.on('close', () => {
          streams.delete(res);
          unwatch();
        });
        watch();
        return true;
      }
      if (url.pathname === '/dashboard/snapshot') {
        collector.poll().then(
          (s) => {
            res.writeHead(200, { 'content-type': 'application/json' });
            res.end(JSON.stringify(s));
          },
          (e: unknown) => {
            res.writeHead(500, { 'content-type': 'application/json' });
            res.end(JSON.stringify({ error: e instanceof Error ? e.message : String(e) }));
          },
        );
        return true;
      }
      return false;
    },
    close() {
      if (timer !== null) clearInterval(timer);
      timer = null;
      for (const s of streams) s.end();
      streams.clear();
    },
  };
}
