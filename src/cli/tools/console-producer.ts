/** `skiff console-producer`: Kafka's kafka-console-producer — one record per stdin line. */
import * as readline from 'node:readline';
import { ClientError } from '../../client/errors.js';
import { Producer, type ProducerRecord } from '../../client/producer.js';
import { type ClientRuntime, systemRuntime } from '../../client/runtime.js';
import type { CliIo } from '../cli.js';
import { commandInfo } from '../commands.js';
import { ClientProps, compressionCodec, producerOptionsFrom } from './client-props.js';
import {
  type Flags,
  openClient,
  parseKeyValues,
  readPropertiesFile,
  runTool,
  type ToolDef,
  UsageError,
} from './common.js';

export const CONSOLE_PRODUCER: ToolDef = {
  ...commandInfo('console-producer'),
  usage: ['Usage: skiff console-producer --bootstrap-server <host:port> --topic <topic> [options] < lines'],
  flags: [
    { name: 'bootstrap-server', arg: 'host:port', help: 'REQUIRED: the broker(s) to connect to' },
    { name: 'topic', arg: 'topic', help: 'REQUIRED: the topic to produce to' },
    {
      name: 'property',
      arg: 'k=v',
      repeat: true,
      help: 'line reader settings: parse.key, key.separator, parse.headers, headers.delimiter, headers.separator, headers.key.separator, null.marker, ignore.error',
    },
    {
      name: 'producer-property',
      arg: 'k=v',
      repeat: true,
      help: 'producer settings (acks, compression.type, linger.ms, batch.size, enable.idempotence, ...); names the producer does not use are named in a warning',
    },
    { name: 'producer.config', arg: 'file', help: 'properties file of producer settings' },
    { name: 'compression-codec', arg: 'codec', help: 'none, gzip, snappy, lz4 or zstd' },
    { name: 'request-required-acks', arg: 'acks', help: 'acks: all, -1, 0 or 1 (default -1)' },
    {
      name: 'batch-size',
      arg: 'bytes',
      help: 'batch.size: bytes of records per partition batch (default 16384)',
    },
    { name: 'timeout', arg: 'ms', help: 'linger.ms: how long a batch waits for more records (default 1000)' },
    { name: 'request-timeout-ms', arg: 'ms', help: 'request.timeout.ms' },
    { name: 'sync', help: 'send each line and wait for its acknowledgement' },
  ],
};

export interface LineReaderConfig {
  parseKey: boolean;
  keySeparator: string;
  parseHeaders: boolean;
  headersDelimiter: string;
  headersSeparator: string;
  headersKeySeparator: string;
  nullMarker: string | null;
  ignoreError: boolean;
}

export function lineReaderConfig(props: ReadonlyMap<string, string>): LineReaderConfig {
  const bool = (k: string) => props.get(k)?.trim().toLowerCase() === 'true';
  const c: LineReaderConfig = {
    parseKey: bool('parse.key'),
    keySeparator: props.get('key.separator') ?? '\t',
    parseHeaders: bool('parse.headers'),
    headersDelimiter: props.get('headers.delimiter') ?? '\t',
    headersSeparator: props.get('headers.separator') ?? ',',
    headersKeySeparator: props.get('headers.key.separator') ?? ':',
    nullMarker: props.get('null.marker') ?? null,
    ignoreError: bool('ignore.error'),
  };
  if (c.parseHeaders) {
    const pairs: [string, string, string, string][] = [
      ['headers.delimiter', c.headersDelimiter, 'headers.separator', c.headersSeparator],
      ['headers.delimiter', c.headersDelimiter, 'headers.key.separator', c.headersKeySeparator],
      ['headers.separator', c.headersSeparator, 'headers.key.separator', c.headersKeySeparator],
    ];
    for (const [a, x, b, y] of pairs) if (x === y) throw new UsageError(`${a} and ${b} may not be equal`);
  }
  return c;
}

/** One stdin line as a record, as Kafka's LineMessageReader reads it. */
export function parseLine(
  line: string,
  lineNumber: number,
  c: LineReaderConfig,
): Pick<ProducerRecord, 'key' | 'value' | 'headers'> {
  let rest = line;
  const headers: { key: string; value: Buffer | null }[] = [];
  const asBytes = (s: string) =>
    c.nullMarker !== null && s === c.nullMarker ? null : Buffer.from(s, 'utf8');
  if (c.parseHeaders) {
    const i = rest.indexOf(c.headersDelimiter);
    if (i < 0) {
      if (!c.ignoreError)
        throw new ClientError(`No headers delimiter found on line number ${lineNumber}: '${line}'`);
    } else {
      const raw = rest.slice(0, i);
      rest = rest.slice(i + c.headersDelimiter.length);
      if (raw !== '') {
        for (const h of raw.split(c.headersSeparator)) {
          const k = h.indexOf(c.headersKeySeparator);
          if (k < 0) headers.push({ key: h, value: null });
          else
            headers.push({ key: h.slice(0, k), value: asBytes(h.slice(k + c.headersKeySeparator.length)) });
        }
      }
    }
  }
  let key: Buffer | null = null;
  if (c.parseKey) {
    const i = rest.indexOf(c.keySeparator);
    if (i < 0) {
      if (!c.ignoreError)
        throw new ClientError(`No key separator found on line number ${lineNumber}: '${line}'`);
    } else {
      key = asBytes(rest.slice(0, i));
      rest = rest.slice(i + c.keySeparator.length);
    }
  }
  return { key, value: asBytes(rest), headers };
}

function producerProps(flags: Flags): ClientProps {
  const props = new ClientProps();
  const file = flags.get('producer.config');
  if (file !== undefined) for (const [k, v] of readPropertiesFile(file)) props.set(k, v);
  for (const [k, v] of parseKeyValues(flags.all('producer-property'), '--producer-property')) props.set(k, v);
  // Kafka's console producer defaults: linger 1000 ms, acks -1; its dedicated flags win over both.
  if (!props.has('linger.ms')) props.set('linger.ms', flags.get('timeout') ?? '1000');
  const acks = flags.get('request-required-acks');
  if (acks !== undefined) props.set('acks', acks);
  const codec = flags.get('compression-codec');
  if (codec !== undefined) props.set('compression.type', compressionCodec(codec) === 0 ? 'none' : codec);
  const rt = flags.get('request-timeout-ms');
  if (rt !== undefined) props.set('request.timeout.ms', rt);
  const batchSize = flags.get('batch-size');
  if (batchSize !== undefined) props.set('batch.size', batchSize);
  return props;
}

export function runConsoleProducer(
  args: string[],
  io: CliIo,
  input: NodeJS.ReadableStream = process.stdin,
  runtime: ClientRuntime = systemRuntime(),
): Promise<number> {
  return runTool(CONSOLE_PRODUCER, args, io, async (flags) => {
    const topic = flags.require('topic');
    const props = producerProps(flags);
    const fromProps = props.get('bootstrap.servers');
    const bootstrap = flags.get('bootstrap-server') ?? fromProps;
    if (bootstrap === undefined) throw new UsageError('missing required argument --bootstrap-server');
    const reader = lineReaderConfig(parseKeyValues(flags.all('property'), '--property'));
    const options = producerOptionsFrom(props);
    const client = openClient('console-producer', bootstrap, runtime, props);
    const producer = new Producer(client, options);
    const unused = props.unusedWarning();
    if (unused !== null) io.err(`skiff console-producer: ${unused}`);
    let firstError: Error | null = null;
    const onDone = (e: Error | null) => {
      if (e && firstError === null) firstError = e;
    };
    try {
      const lines = readline.createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY });
      let n = 0;
      for await (const line of lines) {
        n++;
        const record = { topic, ...parseLine(line, n, reader) };
        if (flags.has('sync')) await producer.produce(record);
        else await producer.send(record, onDone);
        if (firstError) break;
      }
      await producer.flush();
      if (firstError) throw firstError;
      return 0;
    } finally {
      client.close();
    }
  });
}
