import { type DumpLogOptions, dumpLog } from './dump-log.js';
import { NodeFileSystem } from './fs.js';

export interface DumpLogIo {
  out(line: string): void;
  err(line: string): void;
}

export const DUMP_LOG_SUMMARY = "print .log/.index/.timeindex/checkpoint files (Kafka's kafka-dump-log)";

const USAGE = [
  'Usage: skiff dump-log --files <file1,file2,...> [--print-data-log] [--deep-iteration] [--index-sanity-check]',
  '',
  '  --files               comma-separated list of .log, .index, .timeindex, leader-epoch-checkpoint',
  '                        or *-offset-checkpoint files to dump',
  '  --print-data-log      print the keys and payloads of the records (implies --deep-iteration)',
  '  --deep-iteration      print one line per record, not only per batch',
  '  --index-sanity-check  only check that the index files are sane',
  '',
  'Unlike Kafka, an invalid or torn batch does not end the listing: the bytes up to the next batch',
  'whose CRC verifies are reported as one invalid region, with their byte range.',
];

/** `skiff dump-log`: parses Kafka's flags and prints what dumpLog returns. Returns the exit code. */
export async function runDumpLog(args: string[], io: DumpLogIo): Promise<number> {
  const files: string[] = [];
  const options: { -readonly [K in keyof DumpLogOptions]: DumpLogOptions[K] } = {
    printDataLog: false,
    deepIteration: false,
    indexSanityCheck: false,
  };
  for (let i = 0; i < args.length; i++) {
    const a = args[i]!;
    if (a === '--help' || a === '-h') {
      for (const l of USAGE) io.out(l);
      return 0;
    }
    if (a === '--files' || a.startsWith('--files=')) {
      const value = a === '--files' ? args[++i] : a.slice('--files='.length);
      if (!value) {
        io.err('skiff dump-log: --files needs a value');
        return 2;
      }
      files.push(...value.split(',').filter((f) => f.length > 0));
    } else if (a === '--print-data-log') options.printDataLog = true;
    else if (a === '--deep-iteration') options.deepIteration = true;
    else if (a === '--index-sanity-check') options.indexSanityCheck = true;
    else {
      io.err(`skiff dump-log: unknown option '${a}'`);
      for (const l of USAGE) io.err(l);
      return 2;
    }
  }
  if (files.length === 0) {
    io.err('skiff dump-log: missing required argument --files');
    return 2;
  }
  const result = dumpLog(new NodeFileSystem(), files, options);
  for (const l of result.out) io.out(l);
  for (const l of result.err) io.err(l);
  return 0;
}
