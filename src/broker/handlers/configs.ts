/**
 * DescribeConfigs, AlterConfigs and IncrementalAlterConfigs (Kafka's ConfigHelper and
 * ConfigAdminManager): values and their sources from the config table and the metadata image;
 * changes validated here with Kafka's error codes, then written through the controller. The
 * broker applies what comes back in the image (dynamic-config.ts).
 */
import type { ApiResult, ConfigAlteration, ConfigResource } from '../../metadata/cluster-metadata.js';
import { BROKER_CONFIG_DEFS, type ConfigDef, TOPIC_CONFIG_DEFS } from '../../metadata/config-defs.js';
import {
  brokerConfigValue,
  ConfigSource,
  DEFAULT_BROKER_ENTITY,
  type DescribedConfig,
  describeBrokerConfigs,
  describeClusterDefaultConfigs,
  describeTopicConfigs,
  layersFor,
  validateDynamicBrokerConfigs,
  validateTopicConfigs,
} from '../../metadata/config-resolve.js';
import { validateTopicName } from '../../metadata/topic-name.js';
import type { AlterConfigsRequest } from '../../protocol/generated/AlterConfigsRequest.js';
import type { AlterConfigsResponse } from '../../protocol/generated/AlterConfigsResponse.js';
import type { DescribeConfigsRequest } from '../../protocol/generated/DescribeConfigsRequest.js';
import {
  type DescribeConfigsResourceResult,
  type DescribeConfigsResponse,
  type DescribeConfigsResult,
  defaultDescribeConfigsResourceResult,
} from '../../protocol/generated/DescribeConfigsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import type { IncrementalAlterConfigsRequest } from '../../protocol/generated/IncrementalAlterConfigsRequest.js';
import type { IncrementalAlterConfigsResponse } from '../../protocol/generated/IncrementalAlterConfigsResponse.js';
import { AclOperation, ResourceType as AclResourceType } from '../../security/acl.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

/** ConfigResource.Type ids on the wire. */
export const ResourceType = { TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8 } as const;
/** AlterConfigOp.OpType ids on the wire. */
export const ConfigOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

/** DescribeConfigs' ConfigType (v3+), by the table's type names. */
const CONFIG_TYPE: Record<DescribedConfig['type'], number> = {
  unknown: 0,
  boolean: 1,
  string: 2,
  int: 3,
  short: 4,
  long: 5,
  double: 6,
  list: 7,
  class: 8,
  password: 9,
};

const OK: ApiResult = { errorCode: 0, errorMessage: null };
const fail = (errorCode: number, errorMessage: string): ApiResult => ({ errorCode, errorMessage });

/**
 * `stored`: a broker that is in the cluster's metadata but not live (stopped, or not yet back):
 * described from what the metadata stores for it, its dynamic configs.
 */
type Resolved = { resource: ConfigResource; stored?: boolean } | { error: ApiResult };

/** A broker the metadata knows though it is not live: a replica of some partition, or with stored configs. */
function knownOffline(b: BrokerServices, id: number): boolean {
  const image = b.metadata.image();
  if (image.brokers.has(id)) return false;
  if (image.brokerConfigs.has(String(id))) return true;
  for (const t of image.topics.values())
    for (const p of t.partitions) if (p.replicas.includes(id)) return true;
  return false;
}

/** The resource a request names, or Kafka's error for it. */
function resolveResource(b: BrokerServices, type: number, name: string, forAlter: boolean): Resolved {
  if (type === ResourceType.TOPIC) {
    const bad = validateTopicName(name);
    if (bad.errorCode !== ErrorCode.NONE) return { error: bad };
    if (!b.metadata.image().topics.has(name)) {
      // The controller's message on a change; DescribeConfigs answers the code alone (ConfigHelper).
      const message = forAlter ? `The topic '${name}' does not exist.` : null;
      return { error: { errorCode: ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, errorMessage: message } };
    }
    return { resource: { type: 'topic', name } };
  }
  if (type === ResourceType.BROKER) {
    if (name === '') return { resource: { type: 'broker', id: DEFAULT_BROKER_ENTITY } };
    if (!/^\d+$/.test(name)) {
      // ConfigHelper's word on a describe, ConfigAdminManager's on a change.
      const what = forAlter ? 'Node id' : 'Broker id';
      return { error: fail(ErrorCode.INVALID_REQUEST, `${what} must be an integer, but it is: ${name}`) };
    }
    // Describing is answered by the broker asked (it knows its own static configs); a change may
    // name any broker, since the controller stores it for that broker to apply. A broker that is
    // not live cannot be asked: any broker answers for it from the metadata (where Kafka's admin
    // client would wait for it until it times out).
    if (!forAlter && Number(name) !== b.config.nodeId) {
      const id = Number(name);
      if (knownOffline(b, id)) return { resource: { type: 'broker', id: String(id) }, stored: true };
      if (!b.metadata.image().brokers.has(id)) {
        return { error: fail(ErrorCode.INVALID_REQUEST, `Broker ${id} is not registered in the cluster`) };
      }
      return {
        error: fail(
          ErrorCode.INVALID_REQUEST,
          `Unexpected broker id, expected ${b.config.nodeId} or empty string, but received ${name}`,
        ),
      };
    }
    return { resource: { type: 'broker', id: String(Number(name)) } };
  }
  return { error: fail(ErrorCode.INVALID_REQUEST, `Unsupported resource type ${type} for configs`) };
}

const STORED_SOURCES: ReadonlySet<string> = new Set([
  'DYNAMIC_BROKER_CONFIG',
  'DYNAMIC_DEFAULT_BROKER_CONFIG',
]);

function describedConfigs(b: BrokerServices, resource: ConfigResource, stored: boolean): DescribedConfig[] {
  const image = b.metadata.image();
  if (stored && resource.type === 'broker') {
    // Only the layers the metadata holds: the broker's own properties file is not visible here.
    const layers = {
      broker: image.brokerConfigs.get(resource.id) ?? {},
      clusterDefault: image.brokerConfigs.get(DEFAULT_BROKER_ENTITY) ?? {},
    };
    return describeBrokerConfigs(layers)
      .filter((c) => STORED_SOURCES.has(c.source))
      .map((c) => ({ ...c, synonyms: c.synonyms.filter((s) => STORED_SOURCES.has(s.source)) }));
  }
  if (resource.type === 'topic') {
    return describeTopicConfigs(layersFor(image, b.config.nodeId, b.config.staticProps, resource.name));
  }
  const layers = layersFor(image, b.config.nodeId, b.config.staticProps);
  // The cluster-default entity shows only what is set at that level, as Kafka does.
  if (resource.id === DEFAULT_BROKER_ENTITY) return describeClusterDefaultConfigs(layers);
  return describeBrokerConfigs(layers);
}

/** One config at `version`: fields a version does not carry keep the codec's defaults. */
function toWire(
  c: DescribedConfig,
  version: number,
  synonyms: boolean,
  docs: boolean,
): DescribeConfigsResourceResult {
  const out = defaultDescribeConfigsResourceResult();
  out.name = c.name;
  out.value = c.sensitive ? null : c.value;
  out.readOnly = c.readOnly;
  out.isSensitive = c.sensitive;
  if (version === 0) out.isDefault = c.source === 'DEFAULT_CONFIG';
  if (version >= 1) {
    out.configSource = ConfigSource[c.source];
    if (synonyms) {
      out.synonyms = c.synonyms.map((s) => ({
        name: s.name,
        value: c.sensitive ? null : s.value,
        source: ConfigSource[s.source],
      }));
    }
  }
  if (version >= 3) {
    out.configType = CONFIG_TYPE[c.type];
    out.documentation = docs ? c.doc : null;
  }
  return out;
}

/**
 * Kafka's check of a config resource: DESCRIBE_CONFIGS or ALTER_CONFIGS on the CLUSTER for a
 * broker (or broker logger), on the TOPIC for a topic; null when allowed, else the refusal.
 */
function configAuthorization(
  b: BrokerServices,
  ctx: RequestContext,
  resourceType: number,
  name: string,
  operation: typeof AclOperation.DESCRIBE_CONFIGS | typeof AclOperation.ALTER_CONFIGS,
): ApiResult | null {
  if (resourceType === ResourceType.TOPIC)
    return b.authorization.authorize(ctx, operation, AclResourceType.TOPIC, name)
      ? null
      : fail(ErrorCode.TOPIC_AUTHORIZATION_FAILED, 'Topic authorization failed.');
  return b.authorization.authorizeCluster(ctx, operation)
    ? null
    : fail(ErrorCode.CLUSTER_AUTHORIZATION_FAILED, 'Cluster authorization failed.');
}

export async function handleDescribeConfigs(
  b: BrokerServices,
  ctx: RequestContext,
  req: DescribeConfigsRequest,
): Promise<DescribeConfigsResponse> {
  // Kafka answers the authorized resources first, then the refused ones.
  const refusal = (r: { resourceType: number; resourceName: string }) =>
    configAuthorization(b, ctx, r.resourceType, r.resourceName, AclOperation.DESCRIBE_CONFIGS);
  const resources = [
    ...req.resources.filter((r) => refusal(r) === null),
    ...req.resources.filter((r) => refusal(r) !== null),
  ];
  const results: DescribeConfigsResult[] = resources.map((r) => {
    const base = { resourceType: r.resourceType, resourceName: r.resourceName, configs: [] };
    const refused = refusal(r);
    if (refused !== null) return { ...base, ...refused };
    const resolved = resolveResource(b, r.resourceType, r.resourceName, false);
    if ('error' in resolved) return { ...base, ...resolved.error };
    // An empty list of names asks for every config, like null (Kafka's ConfigHelper).
    const keys = r.configurationKeys;
    const wanted = keys === null || keys.length === 0 ? null : new Set(keys);
    const configs = describedConfigs(b, resolved.resource, resolved.stored === true)
      .filter((c) => wanted === null || wanted.has(c.name))
      .map((c) =>
        toWire(c, ctx.apiVersion, req.includeSynonyms, ctx.apiVersion >= 3 && req.includeDocumentation),
      );
    return { ...base, ...OK, configs };
  });
  return { throttleTimeMs: 0, results };
}

function definitionOf(resource: ConfigResource, name: string): ConfigDef | undefined {
  return resource.type === 'topic' ? TOPIC_CONFIG_DEFS.get(name) : BROKER_CONFIG_DEFS.get(name);
}

function validate(resource: ConfigResource, alterations: readonly ConfigAlteration[]): ApiResult {
  const map = Object.fromEntries(alterations.map((a) => [a.name, a.value]));
  return resource.type === 'topic' ? validateTopicConfigs(map) : validateDynamicBrokerConfigs(map);
}

/**
 * Kafka's ConfigAdminManager.preprocess, before anything else: a name twice in one resource, then
 * a null value for anything but a delete (every such name listed), are INVALID_REQUEST.
 */
function preprocess(configs: readonly { name: string; value: string | null; deletes: boolean }[]): ApiResult {
  const names = configs.map((c) => c.name);
  if (names.some((n, i) => names.indexOf(n) !== i)) {
    return fail(ErrorCode.INVALID_REQUEST, 'Error due to duplicate config keys');
  }
  const nulls = configs.filter((c) => !c.deletes && c.value === null).map((c) => c.name);
  if (nulls.length > 0)
    return fail(ErrorCode.INVALID_REQUEST, `Null value not supported for : ${nulls.join(', ')}`);
  return OK;
}

/**
 * Kafka's LogCleaner.validateReconfiguration, which the broker asked runs on a change of its own
 * or the cluster-default configs (DynamicBrokerConfig.validate): log.cleaner.threads may become
 * at least 1, at most double and at least half of what runs now. Kafka's message is its
 * ConfigException wrapped in a second one, word for word.
 */
function validateCleanerThreads(
  b: BrokerServices,
  resource: ConfigResource,
  alterations: readonly ConfigAlteration[],
  incremental: boolean,
): ApiResult {
  if (resource.type !== 'broker') return OK;
  const self = String(b.config.nodeId);
  if (resource.id !== self && resource.id !== DEFAULT_BROKER_ENTITY) return OK;
  const layers = layersFor(b.metadata.image(), b.config.nodeId, b.config.staticProps);
  const layer = resource.id === self ? 'broker' : 'clusterDefault';
  const changed: Record<string, string> = incremental ? { ...layers[layer] } : {};
  for (const a of alterations) {
    if (a.value === null) delete changed[a.name];
    else changed[a.name] = a.value;
  }
  const name = 'log.cleaner.threads';
  const current = brokerConfigValue(name, layers) as number;
  const next = brokerConfigValue(name, { ...layers, [layer]: changed }) as number;
  if (next === current) return OK;
  let problem: string | null = null;
  if (next < 1) problem = 'Log cleaner threads should be at least 1';
  else if (next < Math.trunc(current / 2))
    problem = `Log cleaner threads cannot be reduced to less than half the current value ${current}`;
  else if (next > current * 2)
    problem = `Log cleaner threads cannot be increased to more than double the current value ${current}`;
  if (problem === null) return OK;
  return fail(
    ErrorCode.INVALID_REQUEST,
    `Invalid value org.apache.kafka.common.config.ConfigException: ${problem} for configuration Invalid dynamic configuration`,
  );
}

const resourceKey = (type: number, name: string): string => `${type}:${name}`;

/** Resources named more than once in one alter request: Kafka refuses every copy. */
function repeatedResources(
  resources: readonly { resourceType: number; resourceName: string }[],
): Set<string> {
  const keys = resources.map((r) => resourceKey(r.resourceType, r.resourceName));
  return new Set(keys.filter((k, i) => keys.indexOf(k) !== i));
}

async function alter(
  b: BrokerServices,
  ctx: RequestContext,
  resourceType: number,
  resourceName: string,
  validateOnly: boolean,
  incremental: boolean,
  twice: ReadonlySet<string>,
  plan: (resource: ConfigResource) => ConfigAlteration[] | ApiResult,
): Promise<{ errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }> {
  const base = { resourceType, resourceName };
  if (twice.has(resourceKey(resourceType, resourceName))) {
    return { ...base, ...fail(ErrorCode.INVALID_REQUEST, 'Each resource must appear at most once.') };
  }
  const refused = configAuthorization(b, ctx, resourceType, resourceName, AclOperation.ALTER_CONFIGS);
  if (refused !== null) return { ...base, ...refused };
  const resolved = resolveResource(b, resourceType, resourceName, true);
  if ('error' in resolved) return { ...base, ...resolved.error };
  const alterations = plan(resolved.resource);
  if (!Array.isArray(alterations)) return { ...base, ...alterations };
  const check = validate(resolved.resource, alterations);
  if (check.errorCode !== 0) return { ...base, ...check };
  const threads = validateCleanerThreads(b, resolved.resource, alterations, incremental);
  if (threads.errorCode !== 0) return { ...base, ...threads };
  try {
    const r = await b.metadata.controller.alterConfigs(
      resolved.resource,
      alterations,
      incremental,
      validateOnly,
    );
    return { ...base, errorCode: r.errorCode, errorMessage: r.errorMessage };
  } catch (e) {
    b.logger.warn(`alter configs of ${resourceName}: ${(e as Error).message}`);
    return { ...base, errorCode: ErrorCode.UNKNOWN_SERVER_ERROR, errorMessage: (e as Error).message };
  }
}

/** AlterConfigs (legacy): the request's configs replace every dynamic config of the resource. */
export async function handleAlterConfigs(
  b: BrokerServices,
  ctx: RequestContext,
  req: AlterConfigsRequest,
): Promise<AlterConfigsResponse> {
  const twice = repeatedResources(req.resources);
  const responses = await Promise.all(
    req.resources.map((r) =>
      alter(b, ctx, r.resourceType, r.resourceName, req.validateOnly, false, twice, () => {
        const pre = preprocess(r.configs.map((c) => ({ ...c, deletes: false })));
        if (pre.errorCode !== 0) return pre;
        return r.configs.map((c) => ({ name: c.name, value: c.value }));
      }),
    ),
  );
  return { throttleTimeMs: 0, responses };
}

function listItems(value: string | null | undefined): string[] {
  if (value === null || value === undefined || value.trim() === '') return [];
  return value.split(',').map((s) => s.trim());
}

/**
 * APPEND / SUBTRACT on a config that is not a list: for a topic the controller's answer
 * (ConfigurationControlManager), for a broker the broker's (ConfigAdminManager's
 * prepareIncrementalConfigs). On a broker name Kafka does not know, Kafka means to answer
 * "Unknown config name" but fails with UNKNOWN_SERVER_ERROR (a Scala map lookup throws before
 * its null check); Skiff gives the answer Kafka's code intends.
 */
function listConfig(resource: ConfigResource, name: string, op: number): ConfigDef | ApiResult {
  const def = definitionOf(resource, name);
  if (def?.type === 'list') return def;
  const append = op === ConfigOp.APPEND;
  if (resource.type === 'topic') {
    return fail(
      ErrorCode.INVALID_CONFIG,
      `Can't ${append ? 'APPEND' : 'SUBTRACT'} to key ${name} because its type is not LIST.`,
    );
  }
  if (def === undefined) return fail(ErrorCode.INVALID_CONFIG, `Unknown config name: ${name}`);
  return fail(
    ErrorCode.INVALID_CONFIG,
    `Config value ${append ? 'append' : 'subtract'} is not allowed for config key: ${name}`,
  );
}

/** IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT on the resource's dynamic configs. */
export async function handleIncrementalAlterConfigs(
  b: BrokerServices,
  ctx: RequestContext,
  req: IncrementalAlterConfigsRequest,
): Promise<IncrementalAlterConfigsResponse> {
  const twice = repeatedResources(req.resources);
  const responses = await Promise.all(
    req.resources.map((r) =>
      alter(b, ctx, r.resourceType, r.resourceName, req.validateOnly, true, twice, (resource) => {
        const image = b.metadata.image();
        const current =
          (resource.type === 'topic'
            ? image.topicConfigs.get(resource.name)
            : image.brokerConfigs.get(resource.id)) ?? {};
        const pre = preprocess(
          r.configs.map((c) => ({ ...c, deletes: c.configOperation === ConfigOp.DELETE })),
        );
        if (pre.errorCode !== 0) return pre;
        const out: ConfigAlteration[] = [];
        for (const c of r.configs) {
          switch (c.configOperation) {
            case ConfigOp.SET:
              out.push({ name: c.name, value: c.value });
              break;
            case ConfigOp.DELETE:
              out.push({ name: c.name, value: null });
              break;
            case ConfigOp.APPEND:
            case ConfigOp.SUBTRACT: {
              const list = listConfig(resource, c.name, c.configOperation);
              if ('errorCode' in list) return list;
              const old = listItems(current[c.name] ?? list.defaultValue);
              const change = listItems(c.value);
              const next =
                c.configOperation === ConfigOp.APPEND
                  ? [...old, ...change.filter((v) => !old.includes(v))]
                  : old.filter((v) => !change.includes(v));
              out.push({ name: c.name, value: next.join(',') });
              break;
            }
            default:
              return fail(
                ErrorCode.INVALID_REQUEST,
                `Unknown config operation ${c.configOperation} for ${c.name}`,
              );
          }
        }
        return out;
      }),
    ),
  );
  return { throttleTimeMs: 0, responses };
}
