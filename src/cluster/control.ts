/**
 * How `skiff cluster stop|start|status` reaches a running `skiff up`: the launcher serves a small
 * JSON API over HTTP on 127.0.0.1 and records its address, pid and a random token in
 * DIR/launcher.json (mode 0600). A caller must be able to read the data dir to control the
 * cluster, which is the same trust as being able to delete its files.
 *
 *   GET  /status                     → StatusReport
 *   POST /brokers/<id>/stop[?kill=1] → { ok } once the process has exited
 *   POST /brokers/<id>/start         → { ok } once the broker is listening
 *   GET  /metrics                    → every broker's Prometheus metrics (no token: read-only,
 *                                      on loopback, for a Prometheus scrape; see cluster-metrics.ts)
 */

import * as fs from 'node:fs';
import * as http from 'node:http';
import * as path from 'node:path';
import { LIMITS } from '../common/limits.js';
import { hasToken, serveMetrics } from '../metrics/http-endpoint.js';

export const LAUNCHER_FILE = 'launcher.json';
const TOKEN_HEADER = 'x-skiff-token';

export interface LauncherFile {
  readonly pid: number;
  readonly url: string;
  readonly token: string;
  readonly clusterId: string;
  readonly brokers: number;
}

export type BrokerState = 'starting' | 'running' | 'stopping' | 'stopped' | 'killed' | 'exited' | 'failed';

export interface BrokerStatus {
  readonly id: number;
  readonly pid: number | null;
  readonly port: number;
  readonly state: BrokerState;
  /** Its registration is in the metadata (a killed broker stays until its session times out). */
  readonly registered: boolean;
  readonly controller: boolean;
  readonly leaders: number;
  readonly logDir: string;
}

export interface StatusReport {
  readonly clusterId: string;
  readonly dataDir: string;
  readonly metadataRevision: string;
  readonly brokers: readonly BrokerStatus[];
}

/** What the control API drives; implemented by the Launcher. */
export interface LauncherControl {
  status(): StatusReport;
  stopBroker(id: number, kill: boolean): Promise<string>;
  startBroker(id: number): Promise<string>;
  /** The cluster's Prometheus text (GET /metrics). */
  metrics?(): Promise<string>;
}

export class ControlError extends Error {
  constructor(
    readonly status: number,
    message: string,
  ) {
    super(message);
  }
}

/** Read-only pages served beside the control API without its token (the live dashboard). */
export interface HttpRoutes {
  /** Answers the request if it is one of these routes; false: not ours. */
  handle(req: http.IncomingMessage, res: http.ServerResponse): boolean;
}

export interface ControlServer {
  readonly url: string;
  /** Adds routes answered before the control API's token check (GET only: they change nothing). */
  mount(routes: HttpRoutes): void;
  close(): Promise<void>;
}

/** The dashboard page and its bundle: no data in them, so served without the read token. */
const PUBLIC_ASSETS = new Set(['/', '/dashboard/app.js', '/dashboard/app.css']);

/**
 * `token`: the control API's (launcher.json). `readToken`: when set (`skiff up --http-token`), the
 * read-only routes — /metrics and the dashboard's data — ask for it too (Bearer header or ?token=).
 */
export async function startControlServer(
  control: LauncherControl,
  port: number,
  token: string,
  readToken: string | null = null,
): Promise<ControlServer> {
  const mounted: HttpRoutes[] = [];
  const server = http.createServer((req, res) => {
    if (req.method === 'GET' && !PUBLIC_ASSETS.has(new URL(req.url ?? '/', 'http://127.0.0.1').pathname)) {
      const url = new URL(req.url ?? '/', 'http://127.0.0.1');
      const controlCall = req.headers[TOKEN_HEADER] === token;
      if (!controlCall && !hasToken(req, url, readToken)) {
        res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' });
        res.end(
          'missing or wrong token (skiff up --http-token): send Authorization: Bearer <token> or ?token=\n',
        );
        return;
      }
    }
    if (req.method === 'GET' && mounted.some((r) => r.handle(req, res))) return;
    const reply = (status: number, body: unknown): void => {
      res.writeHead(status, { 'content-type': 'application/json' });
      res.end(JSON.stringify(body));
    };
    const metrics = control.metrics?.bind(control);
    if (req.method === 'GET' && metrics !== undefined && /^\/metrics(\?|$)/.test(req.url ?? '')) {
      void serveMetrics(res, metrics);
      return;
    }
    if (req.headers[TOKEN_HEADER] !== token) {
      reply(403, { error: `missing or wrong ${TOKEN_HEADER} (read it from ${LAUNCHER_FILE})` });
      return;
    }
    const url = new URL(req.url ?? '/', 'http://127.0.0.1');
    const m = /^\/brokers\/(\d+)\/(stop|start)$/.exec(url.pathname);
    if (req.method === 'GET' && url.pathname === '/status') {
      reply(200, control.status());
    } else if (req.method === 'POST' && m !== null) {
      const id = Number(m[1]);
      const action =
        m[2] === 'stop'
          ? control.stopBroker(id, url.searchParams.get('kill') === '1')
          : control.startBroker(id);
      action.then(
        (message) => reply(200, { ok: true, message }),
        (e: unknown) =>
          reply(e instanceof ControlError ? e.status : 500, {
            error: e instanceof Error ? e.message : String(e),
          }),
      );
    } else {
      reply(404, { error: `no such control call: ${req.method} ${url.pathname}` });
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const bound = server.address() as { port: number };
  return {
    url: `http://127.0.0.1:${bound.port}`,
    mount: (routes) => {
      mounted.push(routes);
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}

/** Written atomically (rename) and readable only by the owner: it holds the control token. */
export function writeLauncherFile(dataDir: string, file: LauncherFile): void {
  const target = path.join(dataDir, LAUNCHER_FILE);
  const tmp = `${target}.${process.pid}.tmp`;
  fs.writeFileSync(tmp, `${JSON.stringify(file, null, 2)}\n`, { mode: 0o600 });
  fs.renameSync(tmp, target);
}

export function readLauncherFile(dataDir: string): LauncherFile | null {
  let text: string;
  try {
    text = fs.readFileSync(path.join(dataDir, LAUNCHER_FILE), 'utf8');
  } catch {
    return null;
  }
  try {
    const f = JSON.parse(text) as LauncherFile;
    if (typeof f.url !== 'string' || typeof f.token !== 'string' || typeof f.pid !== 'number') return null;
    return f;
  } catch {
    return null;
  }
}

/** Removes launcher.json if it is still ours (a newer launcher may have replaced it). */
export function removeLauncherFile(dataDir: string, token: string): void {
  if (readLauncherFile(dataDir)?.token === token)
    fs.rmSync(path.join(dataDir, LAUNCHER_FILE), { force: true });
}

export function processAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (e) {
    // EPERM: it exists but belongs to someone else.
    return (e as NodeJS.ErrnoException).code === 'EPERM';
  }
}

export interface ControlAnswer {
  readonly status: number;
  readonly body: Record<string, unknown>;
}

/** One call to the launcher; rejects if it cannot be reached (refused, reset, timed out). */
export function callLauncher(
  file: LauncherFile,
  method: 'GET' | 'POST',
  pathAndQuery: string,
  timeoutMs: number,
): Promise<ControlAnswer> {
  return new Promise((resolve, reject) => {
    const req = http.request(
      `${file.url}${pathAndQuery}`,
      { method, headers: { [TOKEN_HEADER]: file.token }, timeout: timeoutMs },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on('data', (c: Buffer) => {
          size += c.length;
          if (size > LIMITS.controlBodyBytes) req.destroy(new Error('control answer too large'));
          else chunks.push(c);
        });
        res.on('end', () => {
          try {
            resolve({
              status: res.statusCode ?? 0,
              body: JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>,
            });
          } catch (e) {
            reject(e);
          }
        });
        res.on('error', reject);
      },
    );
    req.on('timeout', () => req.destroy(new Error(`no answer within ${timeoutMs} ms`)));
    req.on('error', reject);
    req.end();
  });
}
