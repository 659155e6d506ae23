/**
 * DescribeConfigs, AlterConfigs and IncrementalAlterConfigs (Kafka's ConfigHelper and
 * ConfigAdminManager): values and their sources from the config table and the metadata image;
 * changes validated here with Kafka's error codes, then written through the controller. The
 * broker applies what comes back in the image (dynamic-config.ts).
 */
import type { ApiResult, ConfigAlteration, ConfigResource } from '../../metadata/cluster-metadata.js';
import { BROKER_CONFIG_DEFS, type ConfigDef, TOPIC_CONFIG_DEFS } from '../../metadata/config-defs.js';
import {
  ConfigSource,
  DEFAULT_BROKER_ENTITY,
  describeBrokerConfigs,
  describeTopicConfigs,
  layersFor,
  type ResolvedConfig,
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
import type { BrokerServices, RequestContext } from '../handler-context.js';

/** ConfigResource.Type ids on the wire. */
export const ResourceType = { TOPIC: 2, BROKER: 4, BROKER_LOGGER: 8 } as const;
/** AlterConfigOp.OpType ids on the wire. */
export const ConfigOp = { SET: 0, DELETE: 1, APPEND: 2, SUBTRACT: 3 } as const;

/** DescribeConfigs' ConfigType (v3+), by the table's type names. */
const CONFIG_TYPE: Record<ConfigDef['type'], number> = {
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

type Resolved = { resource: ConfigResource } | { error: ApiResult };

/** The resource a request names, or Kafka's error for it. */
function resolveResource(b: BrokerServices, type: number, name: string, forAlter: boolean): Resolved {
  if (type === ResourceType.TOPIC) {
    const bad = validateTopicName(name);
    if (bad.errorCode !== ErrorCode.NONE) return { error: bad };
    if (!b.metadata.image().topics.has(name)) {
      return { error: fail(ErrorCode.UNKNOWN_TOPIC_OR_PARTITION, `The topic '${name}' does not exist.`) };
    }
    return { resource: { type: 'topic', name } };
  }
  if (type === ResourceType.BROKER) {
    if (name === '') return { resource: { type: 'broker', id: DEFAULT_BROKER_ENTITY } };
    if (!/^\d+$/.test(name)) {
      return { error: fail(ErrorCode.INVALID_REQUEST, `Broker id must be an integer, but it is: ${name}`) };
    }
    // Describing is answered by the broker asked (it knows its own static configs); a change may
    // name any broker, since the controller stores it for that broker to apply.
    if (!forAlter && Number(name) !== b.config.nodeId) {
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

function describedConfigs(b: BrokerServices, resource: ConfigResource): ResolvedConfig[] {
  const image = b.metadata.image();
  if (resource.type === 'topic') {
    return describeTopicConfigs(layersFor(image, b.config.nodeId, b.config.staticProps, resource.name));
  }
  if (resource.id === DEFAULT_BROKER_ENTITY) {
    // The cluster-default entity shows only what is set at that level, as Kafka does.
    const defaults = image.brokerConfigs.get(DEFAULT_BROKER_ENTITY) ?? {};
    return describeBrokerConfigs({ clusterDefault: defaults }).filter(
      (c) => c.source === 'DYNAMIC_DEFAULT_BROKER_CONFIG',
    );
  }
  return describeBrokerConfigs(layersFor(image, b.config.nodeId, b.config.staticProps));
}

/** One config at `version`: fields a version does not carry keep the codec's defaults. */
function toWire(
  c: ResolvedConfig,
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

export async function handleDescribeConfigs(
  b: BrokerServices,
  ctx: RequestContext,
  req: DescribeConfigsRequest,
): Promise<DescribeConfigsResponse> {
  const results: DescribeConfigsResult[] = req.resources.map((r) => {
    const base = { resourceType: r.resourceType, resourceName: r.resourceName, configs: [] };
    const resolved = resolveResource(b, r.resourceType, r.resourceName, false);
    if ('error' in resolved) return { ...base, ...resolved.error };
    const wanted = r.configurationKeys === null ? null : new Set(r.configurationKeys);
    const configs = describedConfigs(b, resolved.resource)
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
  const names = alterations.map((a) => a.name);
  const dup = names.filter((n, i) => names.indexOf(n) !== i);
  if (dup.length > 0) {
    return fail(
      ErrorCode.INVALID_REQUEST,
      `Error due to duplicate config keys: ${[...new Set(dup)].join(', ')}`,
    );
  }
  const map = Object.fromEntries(alterations.map((a) => [a.name, a.value]));
  return resource.type === 'topic' ? validateTopicConfigs(map) : validateDynamicBrokerConfigs(map);
}

async function alter(
  b: BrokerServices,
  resourceType: number,
  resourceName: string,
  validateOnly: boolean,
  incremental: boolean,
  plan: (resource: ConfigResource) => ConfigAlteration[] | ApiResult,
): Promise<{ errorCode: number; errorMessage: string | null; resourceType: number; resourceName: string }> {
  const base = { resourceType, resourceName };
  const resolved = resolveResource(b, resourceType, resourceName, true);
  if ('error' in resolved) return { ...base, ...resolved.error };
  const alterations = plan(resolved.resource);
  if (!Array.isArray(alterations)) return { ...base, ...alterations };
  const check = validate(resolved.resource, alterations);
  if (check.errorCode !== 0) return { ...base, ...check };
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
  _ctx: RequestContext,
  req: AlterConfigsRequest,
): Promise<AlterConfigsResponse> {
  const responses = await Promise.all(
    req.resources.map((r) =>
      alter(b, r.resourceType, r.resourceName, req.validateOnly, false, () => {
        const nulls = r.configs.filter((c) => c.value === null).map((c) => c.name);
        if (nulls.length > 0)
          return fail(ErrorCode.INVALID_REQUEST, `Null value not supported for : ${nulls.join(', ')}`);
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

/** IncrementalAlterConfigs: SET / DELETE / APPEND / SUBTRACT on the resource's dynamic configs. */
export async function handleIncrementalAlterConfigs(
  b: BrokerServices,
  _ctx: RequestContext,
  req: IncrementalAlterConfigsRequest,
): Promise<IncrementalAlterConfigsResponse> {
  const responses = await Promise.all(
    req.resources.map((r) =>
      alter(b, r.resourceType, r.resourceName, req.validateOnly, true, (resource) => {
        const image = b.metadata.image();
        const current =
          (resource.type === 'topic'
            ? image.topicConfigs.get(resource.name)
            : image.brokerConfigs.get(resource.id)) ?? {};
        const out: ConfigAlteration[] = [];
        for (const c of r.configs) {
          const def = definitionOf(resource, c.name);
          switch (c.configOperation) {
            case ConfigOp.SET:
              if (c.value === null)
                return fail(ErrorCode.INVALID_REQUEST, `Null value not supported for : ${c.name}`);
              out.push({ name: c.name, value: c.value });
              break;
            case ConfigOp.DELETE:
              out.push({ name: c.name, value: null });
              break;
            case ConfigOp.APPEND:
            case ConfigOp.SUBTRACT: {
              if (def === undefined) {
                out.push({ name: c.name, value: c.value });
                break;
              }
              if (def.type !== 'list') {
                const verb = c.configOperation === ConfigOp.APPEND ? 'append' : 'subtract';
                return fail(
                  ErrorCode.INVALID_CONFIG,
                  `Config value ${verb} is not allowed for config key: ${c.name}`,
                );
              }
              const old = listItems(current[c.name] ?? def.defaultValue);
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
