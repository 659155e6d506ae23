/** Kafka client properties (producer.config, --producer-property, ...) mapped onto the client's options. */
import type { ConsumerOptions } from '../../client/consumer.js';
import { ClientError } from '../../client/errors.js';
import { type ProducerOptions, parseAcks } from '../../client/producer.js';
import { CODEC_NAMES, type CompressionCodecId } from '../../protocol/records/index.js';

function intProp(props: ReadonlyMap<string, string>, key: string): number | undefined {
  const v = props.get(key);
  if (v === undefined) return undefined;
  if (!/^\s*-?\d+\s*$/.test(v))
    throw new ClientError(`Invalid value ${v} for configuration ${key}: Not a number of type INT`);
  return Number(v);
}

export function compressionCodec(name: string): CompressionCodecId {
  const i = CODEC_NAMES.indexOf(name.trim().toLowerCase());
  if (i < 0) {
    throw new ClientError(
      `Invalid value ${name} for configuration compression.type: String must be one of: ${CODEC_NAMES.join(', ')}`,
    );
  }
  return i as CompressionCodecId;
}

export function producerOptionsFrom(props: ReadonlyMap<string, string>): Partial<ProducerOptions> {
  const o: { -readonly [K in keyof ProducerOptions]?: ProducerOptions[K] } = {};
  const acks = props.get('acks');
  if (acks !== undefined) {
    try {
      o.acks = parseAcks(acks.trim());
    } catch {
      throw new ClientError(
        `Invalid value ${acks} for configuration acks: String must be one of: all, -1, 0, 1`,
      );
    }
  }
  const compression = props.get('compression.type');
  if (compression !== undefined) o.compression = compressionCodec(compression);
  o.batchSize = intProp(props, 'batch.size');
  o.lingerMs = intProp(props, 'linger.ms');
  o.bufferMemory = intProp(props, 'buffer.memory');
  o.retries = intProp(props, 'retries');
  o.maxInFlight = intProp(props, 'max.in.flight.requests.per.connection');
  o.maxRequestSize = intProp(props, 'max.request.size');
  o.retryBackoffMs = intProp(props, 'retry.backoff.ms');
  for (const k of Object.keys(o) as (keyof ProducerOptions)[]) if (o[k] === undefined) delete o[k];
  return o;
}

export function consumerOptionsFrom(props: ReadonlyMap<string, string>): Partial<ConsumerOptions> {
  const o: { -readonly [K in keyof ConsumerOptions]?: ConsumerOptions[K] } = {
    maxWaitMs: intProp(props, 'fetch.max.wait.ms'),
    minBytes: intProp(props, 'fetch.min.bytes'),
    maxBytes: intProp(props, 'fetch.max.bytes'),
    partitionMaxBytes: intProp(props, 'max.partition.fetch.bytes'),
  };
  const reset = props.get('auto.offset.reset');
  if (reset !== undefined) {
    if (reset !== 'earliest' && reset !== 'latest') {
      throw new ClientError(
        `Invalid value ${reset} for configuration auto.offset.reset: String must be one of: earliest, latest`,
      );
    }
    o.resetTo = reset;
  }
  for (const k of Object.keys(o) as (keyof ConsumerOptions)[]) if (o[k] === undefined) delete o[k];
  return o;
}
