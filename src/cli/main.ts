import { runCli } from './cli.js';

/**
 * `skiff ... | head`: once the reader is gone, writes fail with EPIPE (asynchronously, as an
 * 'error' event). The command's output is no longer wanted, so exit quietly at once — no stack
 * trace, no "Unhandled 'error' event" — as Kafka's shell tools do under a closed pipe.
 */
for (const stream of [process.stdout, process.stderr]) {
  stream.on('error', (e: NodeJS.ErrnoException) => {
    if (e.code === 'EPIPE') process.exit(0);
    throw e;
  });
}

process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
