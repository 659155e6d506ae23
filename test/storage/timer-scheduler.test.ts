/**
 * TimerScheduler: a task due now runs on the next turn of the event loop (setImmediate), ahead of
 * a 0 ms timer (Node's 1 ms minimum); later tasks are timers; both can be cancelled.
 */
import * as assert from 'node:assert/strict';
import * as fs from 'node:fs';
import { test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { TimerScheduler } from '../../src/common/scheduler.js';

test('a task due now runs before a 0 ms timer; cancelled tasks never run', async () => {
  const s = new TimerScheduler();
  const ran: string[] = [];
  // The scheduler's timers are unref'd: something must keep the process alive meanwhile.
  const keepAlive = setTimeout(() => {}, 10_000);
  await new Promise<void>((resolve) => {
    // From an I/O callback, where Node orders the check phase (setImmediate) before the next timers.
    fs.readFile(fileURLToPath(import.meta.url), () => {
      setTimeout(() => ran.push('timeout 0'), 0);
      s.schedule('now', 0, () => ran.push('scheduled 0'));
      s.schedule('negative', -5, () => ran.push('scheduled -5'));
      const cancelNow = s.schedule('cancelled now', 0, () => ran.push('cancelled now'));
      const cancelLater = s.schedule('cancelled later', 5, () => ran.push('cancelled later'));
      s.schedule('later', 10, () => {
        ran.push('scheduled 10');
        resolve();
      });
      cancelNow();
      cancelLater();
    });
  });
  clearTimeout(keepAlive);
  assert.deepEqual(ran, ['scheduled 0', 'scheduled -5', 'timeout 0', 'scheduled 10']);
});
