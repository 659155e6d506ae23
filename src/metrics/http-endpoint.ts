/**
 * A broker's HTTP endpoint (`http.listeners`): GET /metrics in Prometheus text. Binds to
 * 127.0.0.1 unless the listener names another host; with `http.auth.token` set, every request
 * must carry the token, as `Authorization: Bearer <token>` or `?token=<token>` (Prometheus's
 * `authorization` scrape setting sends the first). Owned by the broker's composition root, which
 * closes it before the broker stops.
 */
import { timingSafeEqual } from 'node:crypto';
import * as http from 'node:http';
import { PROMETHEUS_CONTENT_TYPE } from './registry.js';

export interface HttpListener {
  readonly host: string;
  readonly port: number;
}

/** `http://HOST:PORT`; an empty host means loopback (not every interface, as a Kafka listener would). */
export function parseHttpListener(value: string): HttpListener {
  const items = value
    .split(',')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  if (items.length !== 1) throw new Error(`http.listeners: expected one http://host:port, got '${value}'`);
  const m = /^http:\/\/(\[[^\]]*\]|[^:/\s]*):(\d{1,5})\/?$/i.exec(items[0]!);
  const port = m === null ? -1 : Number(m[2]);
  if (m === null || port > 65535)
    throw new Error(`http.listeners: expected http://host:port (https is not served), got '${items[0]}'`);
  const host = m[1]!.replace(/^\[|\]$/g, '');
  return { host: host === '' ? '127.0.0.1' : host, port };
}

/** Whether the request carries `token` (Bearer header or ?token=); always true when no token is set. */
export function hasToken(req: http.IncomingMessage, url: URL, token: string | null): boolean {
  if (token === null) return true;
  const auth = req.headers.authorization;
  const given = auth?.startsWith('Bearer ') ? auth.slice(7).trim() : url.searchParams.get('token');
  if (given === null) return false;
  const a = Buffer.from(given);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** Answers GET /metrics with the exposition `metrics` produces. */
export async function serveMetrics(res: http.ServerResponse, metrics: () => Promise<string>): Promise<void> {
  try {
    const text = await metrics();
    res.writeHead(200, { 'content-type': PROMETHEUS_CONTENT_TYPE });
    res.end(text);
  } catch (e) {
    res.writeHead(500, { 'content-type': 'text/plain' });
    res.end(`metrics failed: ${e instanceof Error ? e.message : String(e)}\n`);
  }
}

export interface HttpEndpoint {
  readonly url: string;
  readonly host: string;
  readonly port: number;
  close(): Promise<void>;
}

export interface HttpEndpointOptions {
  readonly listener: HttpListener;
  /** http.auth.token; null: no token asked. */
  readonly token: string | null;
  readonly metrics: () => Promise<string>;
}

export async function startHttpEndpoint(o: HttpEndpointOptions): Promise<HttpEndpoint> {
  const server = http.createServer((req, res) => {
    const url = new URL(req.url ?? '/', 'http://localhost');
    if (!hasToken(req, url, o.token)) {
      res.writeHead(401, { 'content-type': 'text/plain', 'www-authenticate': 'Bearer' });
      res.end('missing or wrong token (http.auth.token): send Authorization: Bearer <token>\n');
    } else if (req.method === 'GET' && url.pathname === '/metrics') {
      void serveMetrics(res, o.metrics);
    } else {
      res.writeHead(404, { 'content-type': 'text/plain' });
      res.end(`no such path: ${req.method} ${url.pathname} (try GET /metrics)\n`);
    }
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(o.listener.port, o.listener.host, () => {
      server.off('error', reject);
      resolve();
    });
  });
  const { port } = server.address() as { port: number };
  const host = o.listener.host;
  return {
    url: `http://${host.includes(':') ? `[${host}]` : host}:${port}`,
    host,
    port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
