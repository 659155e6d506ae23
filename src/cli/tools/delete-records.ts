/** `skiff delete-records`: Kafka's kafka-delete-records, with its JSON input and output lines. */

import * as fs from 'node:fs';
import { Admin } from '../../client/admin.js';
import { ClientError } from '../../client/errors.js';
import type { TopicPartition } from '../../client/partitions.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import { topicPartitionKey } from '../../common/topic-partition.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ADMIN_FLAGS, adminClient, runTool, type ToolDef } from './common.js';

export const DELETE_RECORDS: ToolDef = {
  ...commandInfo('delete-records'),
  usage: ['Usage: skiff delete-records --bootstrap-server <host:port> --offset-json-file <file>'],
  flags: [
    ...ADMIN_FLAGS,
    {
      name: 'offset-json-file',
      arg: 'file',
      help: 'REQUIRED: {"partitions":[{"topic":"foo","partition":1,"offset":1}],"version":1}',
    },
  ],
  notes: ['An offset of -1 deletes up to the high watermark.'],
};

export interface DeleteSpec {
  readonly tp: TopicPartition;
  readonly offset: bigint;
}

/**
 * Parses Kafka's offset JSON. Offsets are read from the raw text so that int64 values beyond 2^53
 * survive (JSON.parse would round them).
 */
export function parseOffsetJson(text: string): DeleteSpec[] {
  let doc: unknown;
  try {
    doc = JSON.parse(text.replace(/("offset"\s*:\s*)(-?\d+)/g, '$1"$2"'));
  } catch (e) {
    throw new ClientError(`the offset JSON file is not valid JSON (${(e as Error).message})`);
  }
  const d = doc as { version?: unknown; partitions?: unknown };
  if (typeof d !== 'object' || d === null) throw new ClientError('the offset JSON file must hold an object');
  const version = d.version ?? 1;
  if (version !== 1) throw new ClientError(`Not supported version field value ${String(version)}`);
  if (!Array.isArray(d.partitions)) throw new ClientError('the offset JSON file has no "partitions" array');
  const specs: DeleteSpec[] = [];
  const seen = new Set<string>();
  const dups = new Set<string>();
  d.partitions.forEach((p: unknown, i) => {
    const e = p as { topic?: unknown; partition?: unknown; offset?: unknown };
    if (typeof e?.topic !== 'string' || !Number.isInteger(e.partition) || typeof e.offset !== 'string') {
      throw new ClientError(`partitions[${i}] needs "topic" (string), "partition" and "offset" (integers)`);
    }
    const key = topicPartitionKey(e.topic, e.partition as number);
    if (seen.has(key)) dups.add(key);
    seen.add(key);
    specs.push({ tp: { topic: e.topic, partition: e.partition as number }, offset: BigInt(e.offset) });
  });
  if (dups.size > 0) {
    throw new ClientError(`Offset json file contains duplicate topic partitions: ${[...dups].join(',')}`);
  }
  return specs;
}

export function runDeleteRecords(
  args: string[],
  io: CliIo,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(DELETE_RECORDS, args, io, async (flags) => {
    const file = flags.require('offset-json-file');
    let text: string;
    try {
      text = fs.readFileSync(file, 'utf8');
    } catch (e) {
      throw new ClientError(
        `cannot read ${file} (${(e as NodeJS.ErrnoException).code ?? (e as Error).message})`,
      );
    }
    const specs = parseOffsetJson(text);
    const client = adminClient('delete-records', flags, runtime);
    try {
      io.out('Executing records delete operation');
      const results = await new Admin(client).deleteRecords(
        new Map(specs.map((s) => [topicPartitionKey(s.tp.topic, s.tp.partition), s])),
      );
      io.out('Records delete operation completed:');
      let failed = false;
      for (const s of specs) {
        const key = topicPartitionKey(s.tp.topic, s.tp.partition);
        const r = results.get(key)!;
        if (r.ok) io.out(`partition: ${key}\tlow_watermark: ${r.value}`);
        else {
          failed = true;
          io.out(`partition: ${key}\terror: ${r.error.message}`);
        }
      }
      // Kafka exits 0 even when partitions failed; Skiff says so in its status for scripts.
      return failed ? 1 : 0;
    } finally {
      client.close();
    }
  });
}
