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
 * Checks a dynamic change of broker configs as Kafka's DynamicBrokerConfig.validateConfigs does:
 * static configs → INVALID_REQUEST (42) with Kafka's message listing all of them; then bad values
 * → INVALID_REQUEST too (Kafka's ConfigAdminManager turns the ConfigException into an
 * InvalidRequestException, KAFKA-13609). Names Kafka does not know are custom configs, which
 * Kafka stores and passes to plugins (customPropsAllowed): accepted, never validated.
 */
export function validateDynamicBrokerConfigs(configs: Readonly<Record<string, string | null>>): ApiResult {
  const notDynamic = Object.keys(configs).filter((name) => {
    const def = BROKER_CONFIG_DEFS.get(name);
    return def !== undefined && def.dynamic !== true;
  });
  if (notDynamic.length > 0) {
    return {
      errorCode: ErrorCode.INVALID_REQUEST,
      errorMessage: `Cannot update these configs dynamically: Set(${notDynamic.join(', ')})`,
    };
  }
  for (const [name, value] of Object.entries(configs)) {
    const def = BROKER_CONFIG_DEFS.get(name);
    if (def === undefined || value === null) continue;
    try {
      parseConfigValue(def, value);
    } catch (e) {
      return { errorCode: ErrorCode.INVALID_REQUEST, errorMessage: (e as Error).message };
    }
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

/** A config's effective value and the layer it comes from (the layer's value may be a synonym's, scaled). */
export interface ResolvedConfig {
  readonly name: string;
  readonly value: string | null;
  readonly source: ConfigSourceName;
  readonly readOnly: boolean;
  readonly sensitive: boolean;
  readonly type: ConfigDef['type'];
  readonly doc: string;
}

/**
 * A config as DescribeConfigs answers it (Kafka's ConfigHelper): its source is the first of its
 * synonyms, or DEFAULT_CONFIG when there is none — which, by Kafka's rules, need not be the layer
 * the value comes from (see describedSynonyms).
 */
export interface DescribedConfig extends Omit<ResolvedConfig, 'type' | 'doc'> {
  /** 'unknown': a custom config, a name Kafka does not define. */
  readonly type: ConfigDef['type'] | 'unknown';
  readonly doc: string | null;
  readonly synonyms: readonly ConfigSynonymEntry[];
}

function scaled(value: string, factor: number | undefined): string {
  if (factor === undefined || factor === 1) return value;
  return (BigInt(value.trim()) * BigInt(factor)).toString();
}

/** The broker layers in precedence order: per broker, cluster default, static. */
function brokerLayers(layers: ConfigLayers): [ConfigMap | undefined, ConfigSourceName][] {
  return [
    [layers.broker, 'DYNAMIC_BROKER_CONFIG'],
    [layers.clusterDefault, 'DYNAMIC_DEFAULT_BROKER_CONFIG'],
    [layers.staticProps, 'STATIC_BROKER_CONFIG'],
  ];
}

/** The value of the first of `synonyms` set at the highest broker layer (scaled), else the first default. */
function brokerValue(
  synonyms: readonly Synonym[],
  layers: ConfigLayers,
): { value: string; source: ConfigSourceName } | null {
  for (const [map, source] of brokerLayers(layers)) {
    for (const s of synonyms) {
      const v = map?.[s.name];
      if (v !== undefined) return { value: scaled(v, s.factor), source };
    }
  }
  for (const s of synonyms) {
    const d = BROKER_CONFIG_DEFS.get(s.name)?.defaultValue;
    if (d != null) return { value: scaled(d, s.factor), source: 'DEFAULT_CONFIG' };
  }
  return null;
}

export function resolveTopicConfig(name: string, layers: ConfigLayers): ResolvedConfig {
  const def = TOPIC_CONFIG_DEFS.get(name);
  if (def === undefined) throw new RangeError(`unknown topic config ${name}`);
  const own = layers.topic?.[name];
  const from =
    own !== undefined
      ? { value: own, source: 'DYNAMIC_TOPIC_CONFIG' as const }
      : brokerValue(def.synonyms ?? [], layers);
  return {
    name,
    value: from?.value ?? def.defaultValue,
    source: from?.source ?? 'DEFAULT_CONFIG',
    readOnly: false,
    sensitive: def.type === 'password',
    type: def.type,
    doc: def.doc,
  };
}

/**
 * A broker config's effective value: its own name or, for log.retention.ms and the like, a
 * lower-priority synonym (log.retention.hours, scaled) — what the broker runs with.
 */
export function resolveBrokerConfig(name: string, layers: ConfigLayers): ResolvedConfig {
  const def = BROKER_CONFIG_DEFS.get(name);
  if (def === undefined) throw new RangeError(`unknown broker config ${name}`);
  const from = brokerValue(BROKER_SYNONYMS.get(name) ?? [{ name }], layers);
  return {
    name,
    value: from?.value ?? def.defaultValue,
    source: from?.source ?? 'DEFAULT_CONFIG',
    readOnly: def.dynamic !== true,
    sensitive: def.type === 'password',
    type: def.type,
    doc: def.doc,
  };
}

/**
 * Kafka's DynamicBrokerConfig.brokerConfigSynonyms: each broker config of a synonym group → every
 * name of the group, highest priority first (log.retention.hours → log.retention.ms,
 * log.retention.minutes, log.retention.hours). DescribeConfigs lists synonyms by these groups.
 */
const BROKER_SYNONYM_GROUPS: ReadonlyMap<string, readonly string[]> = new Map(
  [...BROKER_SYNONYMS.values()].flatMap((group) => {
    const names = group.map((s) => s.name);
    return names.map((n) => [n, names] as const);
  }),
);

/**
 * Kafka's ConfigHelper.configSynonyms for broker config `name`: every name of its synonym group
 * (DynamicBrokerConfig.brokerConfigSynonyms: log.retention.ms, log.retention.minutes,
 * log.retention.hours) set at each layer — per broker, cluster default, static, then the built-in
 * defaults that are not null — layer by layer, and within a layer in the group's order; then
 * everything before the first entry of `name` itself is dropped. So retention.ms shows no
 * synonym at all when only log.retention.hours is set, as Kafka answers.
 */
function describedSynonyms(name: string, layers: ConfigLayers): ConfigSynonymEntry[] {
  const group = BROKER_SYNONYM_GROUPS.get(name) ?? [name];
  const out: ConfigSynonymEntry[] = [];
  for (const [map, source] of brokerLayers(layers)) {
    for (const n of group) {
      const value = map?.[n];
      if (value !== undefined) out.push({ name: n, value, source });
    }
  }
  for (const n of group) {
    const value = BROKER_CONFIG_DEFS.get(n)?.defaultValue;
    if (value != null) out.push({ name: n, value, source: 'DEFAULT_CONFIG' });
  }
  const first = out.findIndex((e) => e.name === name);
  return first < 0 ? [] : out.slice(first);
}

/**
 * Every topic config as DescribeConfigs answers it: the effective value; the synonyms are the
 * topic's own setting, then describedSynonyms of the topic config's first broker synonym (Kafka's
 * ServerTopicConfigSynonyms.TOPIC_CONFIG_SYNONYMS).
 */
export function describeTopicConfigs(layers: ConfigLayers): DescribedConfig[] {
  return TOPIC_CONFIGS.map((def) => {
    const r = resolveTopicConfig(def.name, layers);
    const own = layers.topic?.[def.name];
    const primary = def.synonyms?.[0]?.name;
    const synonyms = [
      ...(own === undefined
        ? []
        : [{ name: def.name, value: r.value, source: 'DYNAMIC_TOPIC_CONFIG' as const }]),
      ...(primary === undefined ? [] : describedSynonyms(primary, layers)),
    ];
    return { ...r, source: synonyms[0]?.source ?? 'DEFAULT_CONFIG', synonyms };
  });
}

/**
 * One broker config as DescribeConfigs answers it for a broker: the value of its own name at the
 * highest layer that sets it (log.retention.ms is null while only log.retention.hours is set, as
 * in Kafka's KafkaConfig), and describedSynonyms.
 */
function describeBrokerConfig(def: ConfigDef, layers: ConfigLayers): DescribedConfig {
  const synonyms = describedSynonyms(def.name, layers);
  const own = synonyms.find((e) => e.name === def.name);
  return {
    name: def.name,
    value: own?.value ?? def.defaultValue,
    source: synonyms[0]?.source ?? 'DEFAULT_CONFIG',
    readOnly: def.dynamic !== true,
    sensitive: def.type === 'password',
    type: def.type,
    doc: def.doc,
    synonyms,
  };
}

/**
 * The custom configs (names Kafka does not define, which AlterConfigs stores for plugins) set at
 * the given broker layers, as Kafka describes them: a config of unknown type is treated as
 * sensitive (KafkaConfig.maybeSensitive), so its value is hidden; it is read-only.
 */
function describeCustomConfigs(
  layers: readonly [ConfigMap | undefined, ConfigSourceName][],
): DescribedConfig[] {
  const names = [...new Set(layers.flatMap(([map]) => Object.keys(map ?? {})))].filter(
    (n) => !BROKER_CONFIG_DEFS.has(n),
  );
  return names.map((name) => {
    const synonyms = layers
      .filter(([map]) => map?.[name] !== undefined)
      .map(([, source]) => ({ name, value: null, source }));
    return {
      name,
      value: null,
      source: synonyms[0]?.source ?? 'DEFAULT_CONFIG',
      readOnly: true,
      sensitive: true,
      type: 'unknown' as const,
      doc: null,
      synonyms,
    };
  });
}

/** Every broker config of one broker, custom ones last, as DescribeConfigs answers them. */
export function describeBrokerConfigs(layers: ConfigLayers): DescribedConfig[] {
  return [
    ...BROKER_CONFIGS.map((d) => describeBrokerConfig(d, layers)),
    ...describeCustomConfigs(brokerLayers(layers)),
  ];
}

/**
 * The cluster-default entity (resource name ''): only the configs set at that level, each with
 * the synonyms from that level alone, as Kafka answers.
 */
export function describeClusterDefaultConfigs(layers: ConfigLayers): DescribedConfig[] {
  const set = layers.clusterDefault ?? {};
  const known = BROKER_CONFIGS.filter((d) => set[d.name] !== undefined).map((d) => {
    const c = describeBrokerConfig(d, layers);
    const synonyms = c.synonyms.filter((e) => e.source === 'DYNAMIC_DEFAULT_BROKER_CONFIG');
    return { ...c, value: set[d.name]!, source: synonyms[0]?.source ?? 'DEFAULT_CONFIG', synonyms };
  });
  return [...known, ...describeCustomConfigs([[set, 'DYNAMIC_DEFAULT_BROKER_CONFIG']])];
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
