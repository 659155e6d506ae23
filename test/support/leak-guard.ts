/**
 * Preloaded into every test file's process by scripts/run-suite.sh (`--import`): once the file's
 * tests have ended, a process still running a minute later is held open by something the file
 * left behind (a client never closed, a socket, a timer, a child process). This names what, and
 * ends the process with a failure. Without it a file whose test failed before its clean-up — a
 * KafkaJS consumer left retrying against a broker the file had stopped — kept its process, and so
 * the whole suite, waiting until CI's time limit.
 */
import { after } from 'node:test';

/**
 * Long enough for the closing that goes on after the last hook (a child's exit, a socket's end);
 * SKIFF_LEAK_GRACE_MS shortens it for the guard's own test.
 */
const GRACE_MS = Number(process.env.SKIFF_LEAK_GRACE_MS ?? 60_000);

// The process's own standard streams, opened now so they count among what it began with.
void process.stdout;
void process.stderr;
const atStart = process.getActiveResourcesInfo();

after(() => {
  setTimeout(() => {
    const left = process.getActiveResourcesInfo();
    for (const r of atStart) {
      const i = left.indexOf(r);
      if (i >= 0) left.splice(i, 1);
    }
    process.stderr.write(
      `leak-guard: ${process.argv[1] ?? 'a test file'} still running ${GRACE_MS / 1000} s after its tests ended, held open by: ${left.join(', ')}\n`,
    );
    process.exit(1);
  }, GRACE_MS).unref();
});
