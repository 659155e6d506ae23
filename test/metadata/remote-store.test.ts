import assert from 'node:assert/strict';
import { fork } from 'node:child_process';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { MessageChannel, type MessagePort } from 'node:worker_threads';
import { ManualClock, SystemClock } from '../../src/common/clock.js';
import { ManualScheduler, TimerScheduler } from '../../src/common/scheduler.js';
import { EmbeddedStore } from '../../src/metadata/embedded-store.js';
import { ipcChannel, portChannel, RemoteStore, serveStore } from '../../src/metadata/remote-store.js';
import { eventually, storeContract } from './store-contract.js';

storeContract('remote (over a MessagePort) to an embedded store', async () => {
  const clock = new ManualClock();
  const server = await EmbeddedStore.open({ clock });
  const ports: MessagePort[] = [];
  const connect = (): RemoteStore => {
    const { port1, port2 } = new MessageChannel();
    ports.push(port1, port2);
    serveStore(server, portChannel(port1));
    return new RemoteStore(portChannel(port2), new ManualScheduler(clock));
  };
  const store = connect();
  const other = connect();
  return {
    store,
    other,
    prefix: '/test/',
    leaseTtlMs: 1000,
    letTimePass: async (ms) => {
      clock.advance(ms);
      server.checkLeases();
    },
    close: async () => {
      await store.close();
      await other.close();
      for (const p of ports) p.close();
      await server.close();
    },
  };
});

describe('remote store over a child process IPC channel', () => {
  it("a SIGKILLed child's leased keys expire; the store lives on", async () => {
    const scheduler = new TimerScheduler();
    const server = await EmbeddedStore.open({
      clock: new SystemClock(),
      scheduler,
      leaseCheckIntervalMs: 50,
    });
    const script = fileURLToPath(new URL('./remote-store-child.js', import.meta.url));
    const child = fork(script, [], { serialization: 'advanced', stdio: 'ignore' });
    try {
      serveStore(server, ipcChannel(child));
      await new Promise<void>((resolve, reject) => {
        child.on('message', (m) => {
          if ((m as { ready?: boolean }).ready) resolve();
        });
        child.on('exit', (code) => reject(new Error(`child exited ${code}`)));
      });
      assert.equal((await server.get('/child/alive'))?.value, String(child.pid));
      // Alive past its TTL thanks to keep-alives.
      await new Promise((r) => setTimeout(r, 1300));
      assert.notEqual(await server.get('/child/alive'), null);
      child.kill('SIGKILL');
      await eventually(async () => (await server.get('/child/alive')) === null, 3000);
      // The store is unaffected.
      assert.ok((await server.currentRevision()) > 0n);
    } finally {
      child.kill('SIGKILL');
      await server.close();
    }
  });
});
