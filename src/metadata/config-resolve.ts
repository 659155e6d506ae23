import { ErrorCode } from '../protocol/generated/errors.js';
import type { ApiResult, ConfigMap } from './cluster-metadata.js';
import {
  BROKER_CONFIG_DEFS,
  BROKER_CONFIGS,
  BROKER_SYNONYMS,
  type ConfigDef,
  type Synonym,
  TOPIC_CONFIG_DEFS,
  TOPIC_CONFIGS,
} from './config-defs.js';

/**
 * Validation (Kafka's error codes and messages) and resolution (which layer a value comes from,
 * for DescribeConfigs) of the configs in config-defs.ts. Pure functions over plain maps.
 */

/** DescribeConfigs ConfigSource ids, as on the wire. */
export const ConfigSource = {
  DYNAMIC_TOPIC_CONFIG: 1,
  DYNAMIC_BROKER_CONFIG: 2,
  DYNAMIC_DEFAULT_BROKER_CONFIG: 3,
  STATIC_BROKER_CONFIG: 4,
  DEFAULT_CONFIG: 5,
} as const;
export type ConfigSourceName = keyof typeof ConfigSource;

export const DEFAULT_BROKER_ENTITY = '<default>';

export type ConfigValue = boolean | number | bigint | string | readonly string[];

const OK: ApiResult = Object.freeze({ errorCode: 0, errorMessage: null });
const INT_MIN = -(2 ** 31);
const INT_MAX = 2 ** 31 - 1;

/** Parses `raw` as Kafka's ConfigDef would; throws a message like Kafka's ConfigException. */
export function parseConfigValue(def: ConfigDef, raw: string): ConfigValue {
  const s = raw.trim();
  const bad = (why: string): never => {
    throw new Error(`Invalid value ${raw} for configuration ${def.name}: ${why}`);
  };
  switch (def.type) {
    case 'boolean':
      if (s.toLowerCase() === 'true') return true;
      if (s.toLowerCase() === 'false') return false;
      return bad('Expected value to be either true or false');
    case 'int':
    case 'short': {
      if (!/^[+-]?\d+$/.test(s)) return bad(`Not a number of type ${def.type.toUpperCase()}`);
      const n = Number(s);
      const [lo, hi] = def.type === 'short' ? [-32768, 32767] : [INT_MIN, INT_MAX];
      if (n < lo || n > hi) return bad(`Not a number of type ${def.type.toUpperCase()}`);
      checkRange(def, n, raw);
      return n;
    }
    case 'long': {
      if (!/^[+-]?\d+$/.test(s)) return bad('Not a number of type LONG');
      const n = BigInt(s);
      if (n < -(2n ** 63n) || n >= 2n ** 63n) return bad('Not a number of type LONG');
      checkRange(def, n, raw);
      return n;
    }
    case 'double': {
      const n = Number(s);
      if (s === '' || Number.isNaN(n)) return bad('Not a number of type DOUBLE');
      checkRange(def, n, raw);
      return n;
    }
    case 'list': {
      const items = s === '' ? [] : s.split(',').map((x) => x.trim());
      if (def.oneOf !== undefined) {
        for (const item of items) {
          if (!def.oneOf.includes(item)) bad(`String must be one of: ${def.oneOf.join(', ')}`);
        }
      }
      if (def.check === 'throttled-replicas') checkThrottledReplicas(def, items, raw);
      return items;
    }
    default:
      if (def.oneOf !== undefined && !def.oneOf.includes(s))
        bad(`String must be one of: ${def.oneOf.join(', ')}`);
      return s;
  }
}

function checkRange(def: ConfigDef, n: number | bigint, raw: string): void {
  const lt = (a: number | bigint, b: number): boolean => (typeof a === 'bigint' ? a < BigInt(b) : a < b);
  const gt = (a: number | bigint, b: number): boolean => (typeof a === 'bigint' ? a > BigInt(b) : a > b);
  if (def.min !== undefined && def.max !== undefined && (lt(n, def.min) || gt(n, def.max))) {
    throw new Error(
      `Invalid value ${raw} for configuration ${def.name}: Value must be in [${def.min}, ${def.max}]`,
    );
  }
  if (def.min !== undefined && lt(n, def.min)) {
    throw new Error(`Invalid value ${raw} for configuration ${def.name}: Value must be at least ${def.min}`);
  }
  if (def.max !== undefined && gt(n, def.max)) {
    throw new Error(
      `Invalid value ${raw} for configuration ${def.name}: Value must be no more than ${def.max}`,
    );
  }
}

function checkThrottledReplicas(def: ConfigDef, items: string[], raw: string): void {
  if (items.length === 1 && items[0] === '*') return;
  for (const item of items) {
    if (!/^\d+:\d+$/.test(item)) {
      throw new Error(
        `Invalid value ${raw} for configuration ${def.name}: must be the literal '*' or a list of replicas in the following format: [partitionId]:[brokerId],[partitionId]:[brokerId],...`,
      );
    }
  }
}

function invalidConfig(message: string): ApiResult {
  return { errorCode: ErrorCode.INVALID_CONFIG, errorMessage: message };
}

/** Checks a topic's configs (null values are deletions and always valid for a known name). */
export function validateTopicConfigs(configs: Readonly<Record<string, string | null>>): ApiResult {
  for (const [name, value] of Object.entries(configs)) {
    const def = TOPIC_CONFIG_DEFS.get(name);
    if (def === undefined) return invalidConfig(`Unknown topic config name: ${name}`);
    if (value === null) continue;
    try {
      parseConfigValue(def, value);
    } catch (e) {
      return invalidConfig((e as Error).message);
    }
  }
  return OK;
}

/**
 * Checks a dynamic change of broker configs: unknown names and bad values → INVALID_CONFIG (40),
 * static configs → INVALID_REQUEST (42) with Kafka's message listing all of them.
 */
export function validateDynamicBrokerConfigs(configs: Readonly<Record<string, string | null>>): ApiResult {
  const notDynamic: string[] = [];
  for (const [name, value] of Object.entries(configs)) {
    const def = BROKER_CONFIG_DEFS.get(name);
    if (def === undefined) return invalidConfig(`Unknown broker config name: ${name}`);
    if (def.dynamic !== true) notDynamic.push(name);
    if (value === null) continue;
    try {
      parseConfigValue(def, value);
    } catch (e) {
      return invalidConfig((e as Error).message);
    }
  }
  if (notDynamic.length > 0) {
    return {
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage: `Cannot update these configs dynamically: Set(${notDynamic.join(', ')})`,
    };
  }
  return OK;
}

/** Where a broker's and its topics' config values come from, highest priority first. */
export interface ConfigLayers {
  readonly topic?: ConfigMap;
  /** Dynamic configs of this broker. */
  readonly broker?: ConfigMap;
  /** Dynamic cluster defaults (entity '<default>'). */
  readonly clusterDefault?: ConfigMap;
  /** The broker's properties file. */
  readonly staticProps?: ConfigMap;
}

export interface ConfigSynonymEntry {
  readonly name: string;
  readonly value: string | null;
  readonly source: ConfigSourceName;
}

export interface ResolvedConfig {
  readonly name: string;
  readonly value: string | null;
  readonly source: ConfigSourceName;
  readonly readOnly: boolean;
  readonly sensitive: boolean;
  readonly type: ConfigDef['type'];
  readonly doc: string;
  /** Every layer that sets this config or a synonym, highest priority first (the first is the value). */
  readonly synonyms: readonly ConfigSynonymEntry[];
}

function scaled(value: string, factor: number | undefined): string {
  if (factor === undefined || factor === 1) return value;
  return (BigInt(value.trim()) * BigInt(factor)).toString();
}

/** Synonym entries of broker-level sources, in precedence order: per broker, default, static. */
function brokerEntries(
  synonyms: readonly Synonym[],
  layers: ConfigLayers,
): (ConfigSynonymEntry & { factor?: number })[] {
  const out: (ConfigSynonymEntry & { factor?: number })[] = [];
  const sources: [ConfigMap | undefined, ConfigSourceName][] = [
    [layers.broker, 'DYNAMIC_BROKER_CONFIG'],
    [layers.clusterDefault, 'DYNAMIC_DEFAULT_BROKER_CONFIG'],
    [layers.staticProps, 'STATIC_BROKER_CONFIG'],
  ];
  for (const [map, source] of sources) {
    for (const s of synonyms) {
      const v = map?.[s.name];
      if (v !== undefined)
        out.push({ name: s.name, value: v, source, ...(s.factor ? { factor: s.factor } : {}) });
    }
  }
  for (const s of synonyms) {
    const def = BROKER_CONFIG_DEFS.get(s.name);
    if (def?.defaultValue != null) {
      out.push({
        name: s.name,
        value: def.defaultValue,
        source: 'DEFAULT_CONFIG',
        ...(s.factor ? { factor: s.factor } : {}),
      });
      break;
    }
  }
  return out;
}

export function resolveTopicConfig(name: string, layers: ConfigLayers): ResolvedConfig {
  const def = TOPIC_CONFIG_DEFS.get(name);
  if (def === undefined) throw new RangeError(`unknown topic config ${name}`);
  const entries: (ConfigSynonymEntry & { factor?: number })[] = [];
  const own = layers.topic?.[name];
  if (own !== undefined) entries.push({ name, value: own, source: 'DYNAMIC_TOPIC_CONFIG' });
  entries.push(...brokerEntries(def.synonyms ?? [], layers));
  const first = entries[0];
  const value = first === undefined ? def.defaultValue : scaled(first.value ?? '', first.factor);
  return {
    name,
    value: first === undefined || first.value === null ? def.defaultValue : value,
    source: first?.source ?? 'DEFAULT_CONFIG',
    readOnly: false,
    sensitive: def.type === 'password',
    type: def.type,
    doc: def.doc,
    synonyms: entries.map(({ name: n, value: v, source }) => ({ name: n, value: v, source })),
  };
}

export function resolveBrokerConfig(name: string, layers: ConfigLayers): ResolvedConfig {
  const def = BROKER_CONFIG_DEFS.get(name);
  if (def === undefined) throw new RangeError(`unknown broker config ${name}`);
  const synonyms = BROKER_SYNONYMS.get(name) ?? [{ name }];
  const entries = brokerEntries(synonyms, layers);
  const first = entries[0];
  return {
    name,
    value: first === undefined || first.value === null ? def.defaultValue : scaled(first.value, first.factor),
    source: first?.source ?? 'DEFAULT_CONFIG',
    readOnly: def.dynamic !== true,
    sensitive: def.type === 'password',
    type: def.type,
    doc: def.doc,
    synonyms: entries.map(({ name: n, value: v, source }) => ({ name: n, value: v, source })),
  };
}

export function describeTopicConfigs(layers: ConfigLayers): ResolvedConfig[] {
  return TOPIC_CONFIGS.map((d) => resolveTopicConfig(d.name, layers));
}

export function describeBrokerConfigs(layers: ConfigLayers): ResolvedConfig[] {
  return BROKER_CONFIGS.map((d) => resolveBrokerConfig(d.name, layers));
}

/** The effective value of every topic config, typed: what a partition's log is configured with. */
export function effectiveTopicConfig(layers: ConfigLayers): Map<string, ConfigValue | null> {
  const out = new Map<string, ConfigValue | null>();
  for (const def of TOPIC_CONFIGS) {
    const { value } = resolveTopicConfig(def.name, layers);
    out.set(def.name, value === null ? null : parseConfigValue(def, value));
  }
  return out;
}

/**
 * One broker config's effective value, typed (int/double → number, long → bigint, list →
 * string[]); null when it has no value at any layer (e.g. log.retention.ms left to its synonyms).
 */
export function brokerConfigValue(name: string, layers: ConfigLayers): ConfigValue | null {
  const def = BROKER_CONFIG_DEFS.get(name);
  if (def === undefined) throw new RangeError(`unknown broker config ${name}`);
  const { value } = resolveBrokerConfig(name, layers);
  return value === null ? null : parseConfigValue(def, value);
}

/** A long in milliseconds or bytes as a JS number; Long.MAX_VALUE ("never") becomes Infinity. */
export function longToNumber(v: bigint): number {
  return v >= 2n ** 53n ? Number.POSITIVE_INFINITY : Number(v);
}

/**
 * The layers for one broker (and optionally one of its topics) from a metadata image: what a
 * broker passes to resolveTopicConfig / resolveBrokerConfig when it applies configs.
 */
export function layersFor(
  image: {
    readonly brokerConfigs: ReadonlyMap<string, ConfigMap>;
    readonly topicConfigs: ReadonlyMap<string, ConfigMap>;
  },
  brokerId: number,
  staticProps: ConfigMap,
  topic?: string,
): ConfigLayers {
  return {
    ...(topic === undefined ? {} : { topic: image.topicConfigs.get(topic) ?? {} }),
    broker: image.brokerConfigs.get(String(brokerId)) ?? {},
    clusterDefault: image.brokerConfigs.get(DEFAULT_BROKER_ENTITY) ?? {},
    staticProps,
  };
}
