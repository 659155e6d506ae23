/**
 * `skiff cluster stop <id> [--kill] | start <id> | status [--data-dir DIR]`: controls the
 * `skiff up` running on DIR through the control API it records in DIR/launcher.json.
 */
import * as path from 'node:path';
import {
  type BrokerStatus,
  callLauncher,
  LAUNCHER_FILE,
  type LauncherFile,
  processAlive,
  readLauncherFile,
  type StatusReport,
} from '../cluster/control.js';
import type { CliIo } from './cli.js';
import { commandInfo } from './commands.js';
import { type Flags, runTool, type ToolDef, UsageError } from './tools/common.js';
import { DEFAULT_DATA_DIR } from './up.js';

/** A graceful stop may take the launcher's grace period (30 s) plus a start (60 s at most). */
const CALL_TIMEOUT_MS = 120_000;

export const CLUSTER: ToolDef = {
  ...commandInfo('cluster'),
  usage: [
    'Usage: skiff cluster status [--data-dir DIR]',
    '       skiff cluster stop <id> [--kill] [--data-dir DIR]',
    '       skiff cluster start <id> [--data-dir DIR]',
  ],
  positionals: 'status | stop <id> | start <id>',
  usageOnError: true,
  flags: [
    {
      name: 'data-dir',
      arg: 'DIR',
      help: `the skiff up's data dir (default ./${DEFAULT_DATA_DIR}, as for skiff up)`,
    },
    { name: 'kill', help: 'stop: SIGKILL, no clean shutdown, files left as they are' },
  ],
  notes: ['stop: SIGTERM, controlled shutdown then clean exit (like docker stop).'],
};

export function runCluster(args: string[], io: CliIo): Promise<number> {
  return runTool(CLUSTER, args, io, (flags) => cluster(io, flags));
}

async function cluster(io: CliIo, flags: Flags): Promise<number> {
  const dataDir = flags.get('data-dir') ?? DEFAULT_DATA_DIR;
  const kill = flags.has('kill');
  const [action, idText, ...extra] = flags.positionals;
  const needsId = action === 'stop' || action === 'start';
  if (action !== 'status' && !needsId)
    throw new UsageError(
      action === undefined ? 'missing the action: status, stop or start' : `unknown action '${action}'`,
    );
  if (needsId && (idText === undefined || !/^\d+$/.test(idText)))
    throw new UsageError(`${action} needs a broker id, got ${idText === undefined ? 'none' : `'${idText}'`}`);
  if ((!needsId && idText !== undefined) || extra.length > 0)
    throw new UsageError(`unexpected argument '${needsId ? extra[0] : idText}'`);
  if (kill && action !== 'stop') throw new UsageError('--kill applies to stop only');
  const dir = path.resolve(dataDir);
  const file = readLauncherFile(dir);
  if (file === null || !processAlive(file.pid)) {
    io.err(
      `skiff cluster: no skiff up is running for data dir ${dir} (${file === null ? `no ${LAUNCHER_FILE}` : `launcher pid ${file.pid} is gone`})`,
    );
    return 1;
  }
  const call = async (method: 'GET' | 'POST', p: string) => {
    try {
      return await callLauncher(file, method, p, CALL_TIMEOUT_MS);
    } catch (e) {
      io.err(
        `skiff cluster: no skiff up is answering for data dir ${dir} at ${file.url} (${(e as Error).message})`,
      );
      return null;
    }
  };
  if (action === 'status') {
    const r = await call('GET', '/status');
    if (r === null) return 1;
    if (r.status !== 200) return fail(io, r.body);
    printStatus(io, r.body as unknown as StatusReport, file);
    return 0;
  }
  const r = await call('POST', `/brokers/${idText}/${action}${kill ? '?kill=1' : ''}`);
  if (r === null) return 1;
  if (r.status !== 200) return fail(io, r.body);
  io.out(String(r.body.message));
  return 0;
}

function fail(io: CliIo, body: Record<string, unknown>): number {
  io.err(`skiff cluster: ${String(body.error ?? 'the launcher refused')}`);
  return 1;
}

function printStatus(io: CliIo, report: StatusReport, file: LauncherFile): void {
  io.out(
    `cluster ${report.clusterId} · data dir ${report.dataDir} · launcher pid ${file.pid} · metadata revision ${report.metadataRevision}`,
  );
  const rows: string[][] = [['ID', 'PID', 'PORT', 'STATE', 'REGISTERED', 'LEADERS', 'CONTROLLER']];
  for (const b of report.brokers as BrokerStatus[]) {
    rows.push([
      String(b.id),
      b.pid === null ? '-' : String(b.pid),
      String(b.port),
      b.state,
      b.registered ? 'yes' : 'no',
      String(b.leaders),
      b.controller ? 'yes' : '',
    ]);
  }
  const widths = rows[0]!.map((_, c) => Math.max(...rows.map((r) => r[c]!.length)));
  for (const r of rows)
    io.out(
      r
        .map((cell, c) => cell.padEnd(widths[c]!))
        .join('  ')
        .trimEnd(),
    );
}
