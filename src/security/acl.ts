/**
 * Kafka's ACL model (org.apache.kafka.common.acl and .resource): resource types, pattern types,
 * operations and permission types with Kafka's wire codes and names, bindings and the filters of
 * DescribeAcls / DeleteAcls. Bindings are stored as metadata/acls.ts's AclRecord; the decisions
 * that use them are in authorizer.ts.
 */
import type { AclRecord } from '../metadata/acls.js';

export const ResourceType = {
  UNKNOWN: 0,
  ANY: 1,
  TOPIC: 2,
  GROUP: 3,
  CLUSTER: 4,
  TRANSACTIONAL_ID: 5,
  DELEGATION_TOKEN: 6,
  USER: 7,
} as const;

export const PatternType = { UNKNOWN: 0, ANY: 1, MATCH: 2, LITERAL: 3, PREFIXED: 4 } as const;

export const AclOperation = {
  UNKNOWN: 0,
  ANY: 1,
  ALL: 2,
  READ: 3,
  WRITE: 4,
  CREATE: 5,
  DELETE: 6,
  ALTER: 7,
  DESCRIBE: 8,
  CLUSTER_ACTION: 9,
  DESCRIBE_CONFIGS: 10,
  ALTER_CONFIGS: 11,
  IDEMPOTENT_WRITE: 12,
  CREATE_TOKENS: 13,
  DESCRIBE_TOKENS: 14,
  TWO_PHASE_COMMIT: 15,
} as const;

export const AclPermissionType = { UNKNOWN: 0, ANY: 1, DENY: 2, ALLOW: 3 } as const;

export type Operation = (typeof AclOperation)[keyof typeof AclOperation];
export type ResourceTypeCode = (typeof ResourceType)[keyof typeof ResourceType];

/** The name of the one CLUSTER resource (Kafka's CLUSTER_NAME). */
export const CLUSTER_NAME = 'kafka-cluster';
/** A LITERAL resource name that matches every name of its type. */
export const WILDCARD_RESOURCE = '*';
/** The principal that matches every principal (ACLs only). */
export const WILDCARD_PRINCIPAL = 'User:*';
export const WILDCARD_HOST = '*';

function nameOf(table: Readonly<Record<string, number>>, code: number): string {
  for (const [name, c] of Object.entries(table)) if (c === code) return name;
  return 'UNKNOWN';
}
function codeOf(table: Readonly<Record<string, number>>, name: string): number | undefined {
  const key = name.toUpperCase().replace(/-/g, '_');
  return Object.hasOwn(table, key) ? table[key] : undefined;
}

export const resourceTypeName = (c: number): string => nameOf(ResourceType, c);
export const patternTypeName = (c: number): string => nameOf(PatternType, c);
export const operationName = (c: number): string => nameOf(AclOperation, c);
export const permissionTypeName = (c: number): string => nameOf(AclPermissionType, c);
/** Kafka's AclOperation.fromString: case-insensitive, `-` or `_` between words. */
export const operationCode = (name: string): number | undefined => codeOf(AclOperation, name);
export const patternTypeCode = (name: string): number | undefined => codeOf(PatternType, name);

/**
 * The operations that may be authorized on a resource type, as Kafka's AclEntry.supportedOperations
 * (ALL aside): what `authorizedOperations` reports and what kafka-acls.sh accepts per resource.
 */
export const SUPPORTED_OPERATIONS: ReadonlyMap<number, readonly number[]> = new Map<number, number[]>([
  [
    ResourceType.TOPIC,
    [
      AclOperation.READ,
      AclOperation.WRITE,
      AclOperation.CREATE,
      AclOperation.DESCRIBE,
      AclOperation.DELETE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
    ],
  ],
  [
    ResourceType.GROUP,
    [
      AclOperation.READ,
      AclOperation.DESCRIBE,
      AclOperation.DELETE,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
    ],
  ],
  [
    ResourceType.CLUSTER,
    [
      AclOperation.CREATE,
      AclOperation.CLUSTER_ACTION,
      AclOperation.DESCRIBE_CONFIGS,
      AclOperation.ALTER_CONFIGS,
      AclOperation.IDEMPOTENT_WRITE,
      AclOperation.ALTER,
      AclOperation.DESCRIBE,
    ],
  ],
  [ResourceType.TRANSACTIONAL_ID, [AclOperation.DESCRIBE, AclOperation.WRITE]],
  [ResourceType.DELEGATION_TOKEN, [AclOperation.DESCRIBE]],
  [ResourceType.USER, [AclOperation.CREATE_TOKENS, AclOperation.DESCRIBE_TOKENS]],
]);

/** An ACL binding as it crosses the wire and sits in the store. */
export type AclBinding = AclRecord;
/** A binding with exactly its fields (from a request or response body with more). */
export { aclRecordOf as bindingOf } from '../metadata/acls.js';

/** A filter of DescribeAcls / DeleteAcls: null strings and ANY codes match everything. */
export interface AclBindingFilter {
  readonly resourceType: number;
  readonly resourceName: string | null;
  readonly patternType: number;
  readonly principal: string | null;
  readonly host: string | null;
  readonly operation: number;
  readonly permissionType: number;
}

const known = (table: Readonly<Record<string, number>>, c: number): boolean =>
  c !== 0 && Object.values(table).includes(c);

/**
 * Why a binding cannot be created (AclControlManager.validateNewAcl and the request's own checks),
 * or null. The message is Kafka's where it has one.
 */
export function invalidBinding(b: AclBinding): string | null {
  if (!known(ResourceType, b.resourceType) || b.resourceType === ResourceType.ANY)
    return `Invalid resourceType ${resourceTypeName(b.resourceType)}`;
  if (b.patternType !== PatternType.LITERAL && b.patternType !== PatternType.PREFIXED)
    return `Invalid patternType ${patternTypeName(b.patternType)}`;
  if (!known(AclOperation, b.operation) || b.operation === AclOperation.ANY)
    return `Invalid operation ${operationName(b.operation)}`;
  if (b.permissionType !== AclPermissionType.ALLOW && b.permissionType !== AclPermissionType.DENY)
    return `Invalid permissionType ${permissionTypeName(b.permissionType)}`;
  if (b.resourceName === '') return 'Resource name should not be empty';
  if (b.resourceType === ResourceType.CLUSTER && b.resourceName !== CLUSTER_NAME)
    return `The only valid name for the CLUSTER resource is ${CLUSTER_NAME}`;
  const colon = b.principal.indexOf(':');
  if (colon <= 0 || colon === b.principal.length - 1)
    return `Could not parse principal from \`${b.principal}\` (no colon is found separating principal type from principal name)`;
  if (b.host === '') return 'Invalid empty host';
  return null;
}

/** Why a filter is unusable (AclControlManager.validateFilter: an UNKNOWN element), or null. */
export function invalidFilter(f: AclBindingFilter): string | null {
  if (!known(ResourceType, f.resourceType) || !known(PatternType, f.patternType))
    return 'Unknown patternFilter.';
  if (!known(AclOperation, f.operation) || !known(AclPermissionType, f.permissionType))
    return 'Unknown entryFilter.';
  return null;
}

/** ResourcePatternFilter.matches and AccessControlEntryFilter.matches together. */
export function filterMatches(f: AclBindingFilter, b: AclBinding): boolean {
  if (f.resourceType !== ResourceType.ANY && f.resourceType !== b.resourceType) return false;
  if (
    f.patternType !== PatternType.ANY &&
    f.patternType !== PatternType.MATCH &&
    f.patternType !== b.patternType
  )
    return false;
  if (f.resourceName !== null) {
    if (f.patternType === PatternType.MATCH) {
      const ok =
        b.patternType === PatternType.LITERAL
          ? b.resourceName === f.resourceName || b.resourceName === WILDCARD_RESOURCE
          : f.resourceName.startsWith(b.resourceName);
      if (!ok) return false;
    } else if (f.resourceName !== b.resourceName) return false;
  }
  if (f.principal !== null && f.principal !== b.principal) return false;
  if (f.host !== null && f.host !== b.host) return false;
  if (f.operation !== AclOperation.ANY && f.operation !== b.operation) return false;
  if (f.permissionType !== AclPermissionType.ANY && f.permissionType !== b.permissionType) return false;
  return true;
}
