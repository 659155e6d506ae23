/**
 * `skiff dump-log`: Kafka's kafka-dump-log.sh over storage's dumpLog — .log, .index, .timeindex, .txnindex,
 * leader-epoch-checkpoint and *-offset-checkpoint files, read straight from disk (no broker).
 */
import { dumpLog } from '../../storage/dump-log.js';
import { NodeFileSystem } from '../../storage/fs.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { runTool, type ToolDef, UsageError } from './common.js';

export const DUMP_LOG: ToolDef = {
  ...commandInfo('dump-log'),
  usage: [
    'Usage: skiff dump-log --files <file1,file2,...> [--print-data-log] [--deep-iteration] [--index-sanity-check]',
  ],
  flags: [
    {
      name: 'files',
      arg: 'file1,file2,...',
      repeat: true,
      help: 'REQUIRED: .log, .index, .timeindex, .txnindex, .snapshot, leader-epoch-checkpoint or *-offset-checkpoint files',
    },
    { name: 'print-data-log', help: 'print the keys and payloads of the records (implies --deep-iteration)' },
    { name: 'deep-iteration', help: 'print one line per record, not only per batch' },
    { name: 'index-sanity-check', help: 'only check that the index files are sane' },
  ],
  notes: [
    'Unlike Kafka, an invalid or torn batch does not end the listing: the bytes up to the next batch',
    'whose CRC verifies are reported as one invalid region, with their byte range. Why: a segment is',
    "dumped to see the damage and what follows it; Kafka's tool stops at the first bad batch.",
  ],
};

export function runDumpLog(args: string[], io: CliIo): Promise<number> {
  return runTool(DUMP_LOG, args, io, async (flags) => {
    const files = flags.all('files').flatMap((v) => v.split(',').filter((f) => f.length > 0));
    if (files.length === 0) throw new UsageError('missing required argument --files');
    const result = dumpLog(new NodeFileSystem(), files, {
      printDataLog: flags.has('print-data-log'),
      deepIteration: flags.has('deep-iteration'),
      indexSanityCheck: flags.has('index-sanity-check'),
    });
    for (const l of result.out) io.out(l);
    for (const l of result.err) io.err(l);
    return 0;
  });
}
