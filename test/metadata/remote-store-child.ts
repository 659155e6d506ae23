import { TimerScheduler } from '../../src/common/scheduler.js';
import { ipcChannel, RemoteStore } from '../../src/metadata/remote-store.js';
import { put } from '../../src/metadata/store.js';

/**
 * A broker-like child for remote-store.test.ts: registers a key on a 1 s lease through the
 * parent's store and keeps the lease alive until it is killed. Does nothing without an IPC
 * channel (the test runner also loads every file under test/).
 */
async function main(): Promise<void> {
  if (process.send === undefined) return;
  const scheduler = new TimerScheduler();
  const store = new RemoteStore(ipcChannel(process), scheduler, 5000);
  const lease = await store.grantLease(1000);
  await put(store, '/child/alive', String(process.pid), lease);
  setInterval(() => void store.keepAlive(lease).catch(() => {}), 200);
  process.send({ ready: true });
}

void main();
