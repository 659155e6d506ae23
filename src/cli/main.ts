import * as module from 'node:module';

/**
 * Node 22.1+ keeps the compiled code of the modules loaded after this call in a cache on disk
 * (NODE_COMPILE_CACHE, else node-compile-cache under os.tmpdir()), so the next `skiff` run skips
 * compiling them; NODE_DISABLE_COMPILE_CACHE=1 turns it off. Node 20 has no such cache: nothing to
 * do. Enabled before the CLI is imported (below, dynamically), since a static import would be
 * compiled first.
 */
(module as { enableCompileCache?: () => unknown }).enableCompileCache?.();

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

const { runCli } = await import('./cli.js');
process.exitCode = await runCli(process.argv.slice(2), {
  out: (line) => process.stdout.write(`${line}\n`),
  err: (line) => process.stderr.write(`${line}\n`),
});
