/** Kafka client properties (producer.config, --producer-property, ...) mapped onto the client's options. */
import type { ConsumerOptions } from '../../client/consumer.js';
import { ClientError } from '../../client/errors.js';
import type { GroupConsumerOptions } from '../../client/group-consumer.js';
import {
  DEFAULT_PRODUCER_OPTIONS,
  idempotenceConflict,
  MAX_IN_FLIGHT_CONFLICT,
  MAX_IN_FLIGHT_FOR_IDEMPOTENCE,
  type ProducerOptions,
  parseAcks,
} from '../../client/producer-options.js';
import { CODEC_NAMES, type CompressionCodecId } from '../../protocol/records/index.js';

function intProp(props: ReadonlyMap<string, string>, key: string): number | undefined {
  const v = props.get(key);
  if (v === undefined) return undefined;
  if (!/^\s*-?\d+\s*$/.test(v))
    throw new ClientError(`Invalid value ${v} for configuration ${key}: Not a number of type INT`);
  return Number(v);
}

/**
 * Client properties as Kafka's AbstractConfig holds them: every key read is remembered, so that the
 * ones nothing read (unknown names, or settings Skiff's client does not implement) can be named
 * rather than dropped silently.
 */
export class ClientProps extends Map<string, string> {
  private readonly read = new Set<string>();

  override get(key: string): string | undefined {
    this.read.add(key);
    return super.get(key);
  }

  override has(key: string): boolean {
    this.read.add(key);
    return super.has(key);
  }

  /** Kafka's producer log line for the supplied keys nothing read, or null when every one was. */
  unusedWarning(): string | null {
    const unused = [...this.keys()].filter((k) => !this.read.has(k));
    if (unused.length === 0) return null;
    return `These configurations '[${unused.join(', ')}]' were supplied but are not used yet.`;
  }
}

function boolProp(props: ReadonlyMap<string, string>, key: string): boolean | undefined {
  const v = props.get(key);
  if (v === undefined) return undefined;
  const t = v.trim().toLowerCase();
  if (t === 'true' || t === 'false') return t === 'true';
  throw new ClientError(
    `Invalid value ${v} for configuration ${key}: Expected value to be either true or false`,
  );
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
  o.idempotence = idempotenceFrom(boolProp(props, 'enable.idempotence'), {
    ...DEFAULT_PRODUCER_OPTIONS,
    ...defined(o),
  });
  for (const k of Object.keys(o) as (keyof ProducerOptions)[]) if (o[k] === undefined) delete o[k];
  return o;
}

function defined<T extends object>(o: T): Partial<T> {
  return Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as Partial<T>;
}

/**
 * enable.idempotence as Kafka 4's ProducerConfig settles it: on by default, quietly off when acks
 * is not all or retries is 0 unless it was asked for explicitly, in which case the conflict is
 * refused; max.in.flight above 5 is refused unless idempotence is turned off (KAFKA-17927: it had
 * only turned idempotence off, with a warning, before 4.0).
 */
function idempotenceFrom(
  asked: boolean | undefined,
  o: Pick<ProducerOptions, 'acks' | 'retries' | 'maxInFlight'>,
): boolean {
  if (asked === false) return false;
  const conflict = idempotenceConflict(o);
  if (conflict !== null && asked === true) throw new ClientError(conflict);
  if (o.maxInFlight > MAX_IN_FLIGHT_FOR_IDEMPOTENCE) throw new ClientError(MAX_IN_FLIGHT_CONFLICT);
  return conflict === null;
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

/** The group membership settings of a consumer (group.id is the caller's: Kafka's tools check it). */
export function groupOptionsFrom(
  props: ReadonlyMap<string, string>,
): Partial<Omit<GroupConsumerOptions, 'groupId'>> {
  const o: { -readonly [K in keyof GroupConsumerOptions]?: GroupConsumerOptions[K] } = {
    sessionTimeoutMs: intProp(props, 'session.timeout.ms'),
    rebalanceTimeoutMs: intProp(props, 'max.poll.interval.ms'),
    heartbeatIntervalMs: intProp(props, 'heartbeat.interval.ms'),
    autoCommit: boolProp(props, 'enable.auto.commit'),
    autoCommitIntervalMs: intProp(props, 'auto.commit.interval.ms'),
  };
  const instance = props.get('group.instance.id');
  if (instance !== undefined) o.groupInstanceId = instance;
  for (const k of Object.keys(o) as (keyof GroupConsumerOptions)[]) if (o[k] === undefined) delete o[k];
  return o;
}
