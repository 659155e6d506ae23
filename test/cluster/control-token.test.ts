/**
 * skiff up's HTTP port: the control API always asks for launcher.json's token; with --http-token
 * the read-only routes (/metrics, the dashboard's data) ask for that one, the page and its bundle
 * do not (they hold no data); without it they are open (loopback only).
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type HttpRoutes, type LauncherControl, startControlServer } from '../../src/cluster/control.js';

const control: LauncherControl = {
  status: () => ({ clusterId: 'c', dataDir: '/d', metadataRevision: '1', brokers: [] }),
  stopBroker: async () => 'stopped',
  startBroker: async () => 'started',
  metrics: async () =>
    '# HELP skiff_broker_up x\n# TYPE skiff_broker_up gauge\nskiff_broker_up{node_id="1"} 1\n',
};

const page: HttpRoutes = {
  handle(req, res) {
    const path = new URL(req.url ?? '/', 'http://x').pathname;
    if (path !== '/' && path !== '/dashboard/app.js' && path !== '/dashboard/events') return false;
    res.writeHead(200);
    res.end(path);
    return true;
  },
};

async function statusOf(base: string, path: string, headers: Record<string, string> = {}): Promise<number> {
  return (await fetch(`${base}${path}`, { headers })).status;
}

describe('skiff up HTTP port tokens', () => {
  it('with --http-token: the data asks for it, the page does not, the control API keeps its own', async () => {
    const server = await startControlServer(control, 0, 'control-secret', 'read-secret');
    server.mount(page);
    try {
      const u = server.url;
      assert.equal(await statusOf(u, '/metrics'), 401);
      assert.equal(await statusOf(u, '/dashboard/events'), 401);
      assert.equal(await statusOf(u, '/metrics?token=wrong'), 401);
      assert.equal(await statusOf(u, '/metrics?token=read-secret'), 200);
      assert.equal(await statusOf(u, '/dashboard/events', { authorization: 'Bearer read-secret' }), 200);
      assert.equal(await statusOf(u, '/'), 200);
      assert.equal(await statusOf(u, '/dashboard/app.js'), 200);
      assert.equal(await statusOf(u, '/status', { authorization: 'Bearer read-secret' }), 403);
      assert.equal(await statusOf(u, '/status', { 'x-skiff-token': 'control-secret' }), 200);
    } finally {
      await server.close();
    }
  });

  it('without it: the read-only routes are open on loopback, the control API is not', async () => {
    const server = await startControlServer(control, 0, 'control-secret');
    server.mount(page);
    try {
      assert.match(server.url, /^http:\/\/127\.0\.0\.1:\d+$/);
      assert.equal(await statusOf(server.url, '/metrics'), 200);
      assert.equal(await statusOf(server.url, '/dashboard/events'), 200);
      assert.equal(await statusOf(server.url, '/status'), 403);
    } finally {
      await server.close();
    }
  });
});
