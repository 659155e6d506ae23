/**
 * `skiff broker` as a child process on a free 127.0.0.1 port, for tests that drive the real command
 * line (tools, kcat). Resolves once the broker prints its ready line; stop() sends SIGTERM and waits,
 * falling back to SIGKILL, then removes the data directory.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

/**
 * The compiled CLI entry next to this file (what bin/skiff.js loads), found relative to the compiled
 * test so the suite also runs from a private outDir while other sessions rebuild dist/.
 */
export const SKIFF = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../src/cli/main.js');

export interface BrokerProcess {
  readonly port: number;
  readonly bootstrap: string;
  readonly dir: string;
  /** Everything the broker printed so far. */
  output(): string;
  stop(): Promise<void>;
}

export async function startBrokerProcess(
  extraProperties: readonly string[] = [],
  readyTimeoutMs = 15_000,
  /** Writes what the log dir holds before the broker first starts (a broker's state on disk). */
  prepare?: (logDir: string) => void,
  /** More arguments of `skiff broker` (e.g. --add-scram). */
  extraArgs: readonly string[] = [],
): Promise<BrokerProcess> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-broker-proc-'));
  try {
    prepare?.(path.join(dir, 'logs'));
  } catch (e) {
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  const props = path.join(dir, 'server.properties');
  fs.writeFileSync(
    props,
    [
      'node.id=1',
      'listeners=PLAINTEXT://127.0.0.1:0',
      `log.dirs=${path.join(dir, 'logs')}`,
      'num.partitions=1',
      ...extraProperties,
      '',
    ].join('\n'),
  );
  const child: ChildProcess = spawn(process.execPath, [SKIFF, 'broker', '--config', props, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  const exited = new Promise<void>((resolve) => child.once('exit', () => resolve()));
  const ready = new Promise<number>((resolve, reject) => {
    const timer = setTimeout(
      () => reject(new Error(`broker not ready after ${readyTimeoutMs} ms:\n${out}`)),
      readyTimeoutMs,
    );
    const onData = (chunk: Buffer) => {
      out += chunk.toString();
      const m = /ready: listening on PLAINTEXT:\/\/127\.0\.0\.1:(\d+)/.exec(out);
      if (m) {
        clearTimeout(timer);
        resolve(Number(m[1]));
      }
    };
    child.stdout!.on('data', onData);
    child.stderr!.on('data', onData);
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`broker exited with ${code}:\n${out}`));
    });
  });
  let port: number;
  try {
    port = await ready;
  } catch (e) {
    // Not ready: the broker goes, and so does its data directory.
    if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
    await exited;
    fs.rmSync(dir, { recursive: true, force: true });
    throw e;
  }
  return {
    port,
    bootstrap: `127.0.0.1:${port}`,
    dir,
    output: () => out,
    async stop() {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGTERM');
        const killer = setTimeout(() => child.kill('SIGKILL'), 5_000);
        await exited;
        clearTimeout(killer);
      }
      fs.rmSync(dir, { recursive: true, force: true });
    },
  };
}

export interface ToolRun {
  readonly status: number | null;
  readonly stdout: string;
  readonly stderr: string;
}

/**
 * Runs a command to completion (stdin from `input`) without blocking the event loop, so a broker
 * running in this process keeps serving; SIGKILLed after `timeoutMs`.
 */
export function runProcess(
  command: string,
  args: readonly string[],
  input = '',
  timeoutMs = 30_000,
  options: { readonly cwd?: string; readonly env?: NodeJS.ProcessEnv } = {},
): Promise<ToolRun> {
  return new Promise((resolve, reject) => {
    const p = spawn(command, [...args], { ...options, stdio: ['pipe', 'pipe', 'pipe'] });
    let stdout = '';
    let stderr = '';
    const timer = setTimeout(() => p.kill('SIGKILL'), timeoutMs);
    p.stdout.on('data', (c: Buffer) => {
      stdout += c.toString();
    });
    p.stderr.on('data', (c: Buffer) => {
      stderr += c.toString();
    });
    p.on('error', reject);
    p.on('close', (status) => {
      clearTimeout(timer);
      resolve({ status, stdout, stderr });
    });
    // A command that exits without reading its input (or closes it) is judged by its status and
    // output, not by the EPIPE of writing to it (Node 26 raised it at once for an empty write).
    p.stdin.on('error', () => {});
    try {
      if (input === '') p.stdin.end();
      else p.stdin.end(input);
    } catch {
      // as above
    }
  });
}

/** Runs `skiff <args>` to completion (stdin from `input`), without blocking the event loop. */
export function runSkiff(args: readonly string[], input = '', timeoutMs = 30_000): Promise<ToolRun> {
  return runProcess(process.execPath, [SKIFF, ...args], input, timeoutMs);
}

/** Polls the broker's output (its log) until `pattern` appears; the tail of it in the error if not. */
export async function waitForOutput(b: BrokerProcess, pattern: RegExp, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!pattern.test(b.output())) {
    if (Date.now() > deadline)
      throw new Error(`no ${pattern} in the broker's output:\n${b.output().slice(-3000)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}
