/**
 * Skiff's authorizer: Kafka's StandardAuthorizer decisions over the ACLs of the metadata image.
 * For an operation on a resource: super users may do anything; otherwise the ACLs whose pattern
 * matches the resource (LITERAL by name, the LITERAL wildcard `*`, PREFIXED by prefix) are those
 * of the resource; among them, one naming the principal (or `User:*`) and the host (or `*`) and
 * the operation decides — a DENY wins over any ALLOW; an ALLOW of READ, WRITE, DELETE or ALTER
 * also allows DESCRIBE, and of ALTER_CONFIGS also DESCRIBE_CONFIGS (a DENY implies nothing).
 * A resource with no ACL at all is allowed only under allow.everyone.if.no.acl.found.
 *
 * Owned by the broker's composition root; reads the ACLs through `acls()` on each decision and
 * re-indexes only when the image's ACL map changes (the image builder replaces it on a change).
 */
import type { AclRecord } from '../metadata/acls.js';
import {
  AclOperation,
  AclPermissionType,
  PatternType,
  SUPPORTED_OPERATIONS,
  WILDCARD_HOST,
  WILDCARD_PRINCIPAL,
  WILDCARD_RESOURCE,
} from './acl.js';

export interface AuthorizerConfig {
  /** super.users: principals (`User:admin`) allowed everything. */
  readonly superUsers: ReadonlySet<string>;
  /** allow.everyone.if.no.acl.found */
  readonly allowEveryoneIfNoAclFound: boolean;
}

/** The class names that turn Skiff's authorizer on (KRaft's and the ZooKeeper-era one). */
export const AUTHORIZER_CLASS_NAMES: readonly string[] = [
  'org.apache.kafka.metadata.authorizer.StandardAuthorizer',
  'kafka.security.authorizer.AclAuthorizer',
];

/**
 * The authorizer settings of server.properties: null when authorizer.class.name is empty (no
 * authorizer: everything is allowed, as Kafka). Throws on a class Skiff does not provide.
 */
export function authorizerConfigOf(
  className: string,
  props: { readonly superUsers: string; readonly allowEveryone: boolean },
): AuthorizerConfig | null {
  const name = className.trim();
  if (name === '') return null;
  if (!AUTHORIZER_CLASS_NAMES.includes(name)) {
    throw new Error(
      `authorizer.class.name: Skiff provides only its own ACL authorizer, named ${AUTHORIZER_CLASS_NAMES.join(' or ')}; got '${name}'`,
    );
  }
  const users = props.superUsers
    .split(';')
    .map((s) => s.trim())
    .filter((s) => s !== '');
  return { superUsers: new Set(users), allowEveryoneIfNoAclFound: props.allowEveryone };
}

/** One ACL, pre-split for matching. */
interface Entry {
  readonly record: AclRecord;
}

interface TypeIndex {
  readonly literal: Map<string, Entry[]>;
  /** PREFIXED ACLs by their prefix, and the lengths of those prefixes (a name's candidates). */
  readonly prefixed: Map<string, Entry[]>;
  readonly prefixLengths: number[];
}

/** What a decision needs to know about the requester. */
export interface Requester {
  /** `User:alice` */
  readonly principal: string;
  /** The client's IP address as Kafka's getHostAddress prints it (`127.0.0.1`). */
  readonly host: string;
}

export class AclAuthorizer {
  private indexedFrom: ReadonlyMap<string, AclRecord> | undefined = undefined;
  private index = new Map<number, TypeIndex>();

  constructor(
    readonly config: AuthorizerConfig,
    private readonly acls: () => ReadonlyMap<string, AclRecord> | undefined,
  ) {
    this.reindex();
  }

  isSuperUser(principal: string): boolean {
    return this.config.superUsers.has(principal);
  }

  /** StandardAuthorizerData.authorize for one action on a LITERAL resource name. */
  authorize(who: Requester, operation: number, resourceType: number, resourceName: string): boolean {
    if (this.isSuperUser(who.principal)) return true;
    const idx = this.typeIndex(resourceType);
    if (idx === undefined) return this.config.allowEveryoneIfNoAclFound;
    let found = false;
    let allowed = false;
    const consider = (entries: readonly Entry[] | undefined): boolean => {
      if (entries === undefined) return false;
      for (const e of entries) {
        found = true;
        const r = decide(e.record, who, operation);
        if (r === 'deny') return true;
        if (r === 'allow') allowed = true;
      }
      return false;
    };
    if (consider(idx.literal.get(resourceName))) return false;
    for (const length of idx.prefixLengths) {
      if (length > resourceName.length) break;
      if (consider(idx.prefixed.get(resourceName.slice(0, length)))) return false;
    }
    if (resourceName !== WILDCARD_RESOURCE && consider(idx.literal.get(WILDCARD_RESOURCE))) return false;
    if (allowed) return true;
    return !found && this.config.allowEveryoneIfNoAclFound;
  }

  /**
   * Authorizer.authorizeByResourceType: may the requester do `operation` on some resource of the
   * type — an ALLOW on a pattern not dominated by a DENY of the same principal (Kafka's rule,
   * used by InitProducerId for idempotent producers: WRITE on any topic).
   */
  authorizeByResourceType(who: Requester, operation: number, resourceType: number): boolean {
    if (this.authorize(who, operation, resourceType, 'hardcode')) return true;
    const idx = this.typeIndex(resourceType);
    if (idx === undefined) return false;
    const denyLiteral = new Set<string>();
    const denyPrefixed = new Set<string>();
    const allowLiteral = new Set<string>();
    const allowPrefixed = new Set<string>();
    const all = [...[...idx.literal.values()].flat(), ...[...idx.prefixed.values()].flat()];
    for (const { record: a } of all) {
      if (a.host !== who.host && a.host !== WILDCARD_HOST) continue;
      if (a.principal !== who.principal && a.principal !== WILDCARD_PRINCIPAL) continue;
      if (a.operation !== operation && a.operation !== AclOperation.ALL) continue;
      const literal = a.patternType === PatternType.LITERAL;
      if (a.permissionType === AclPermissionType.DENY) {
        if (literal && a.resourceName === WILDCARD_RESOURCE) return false;
        (literal ? denyLiteral : denyPrefixed).add(a.resourceName);
      } else if (a.permissionType === AclPermissionType.ALLOW) {
        if (literal && a.resourceName === WILDCARD_RESOURCE) return true;
        (literal ? allowLiteral : allowPrefixed).add(a.resourceName);
      }
    }
    const dominated = (name: string): boolean => {
      for (let i = 1; i <= name.length; i++) if (denyPrefixed.has(name.slice(0, i))) return true;
      return false;
    };
    for (const name of allowLiteral) if (!denyLiteral.has(name) && !dominated(name)) return true;
    for (const name of allowPrefixed) if (!dominated(name)) return true;
    return false;
  }

  /** The operations of the resource's type the requester may perform (AuthHelper.authorizedOperations). */
  authorizedOperations(who: Requester, resourceType: number, resourceName: string): number[] {
    const ops = SUPPORTED_OPERATIONS.get(resourceType) ?? [];
    return ops.filter((op) => this.authorize(who, op, resourceType, resourceName));
  }

  private typeIndex(resourceType: number): TypeIndex | undefined {
    if (this.acls() !== this.indexedFrom) this.reindex();
    return this.index.get(resourceType);
  }

  private reindex(): void {
    const acls = this.acls();
    this.indexedFrom = acls;
    const index = new Map<number, TypeIndex>();
    for (const record of acls?.values() ?? []) {
      let idx = index.get(record.resourceType);
      if (idx === undefined) {
        idx = { literal: new Map(), prefixed: new Map(), prefixLengths: [] };
        index.set(record.resourceType, idx);
      }
      const byName =
        record.patternType === PatternType.PREFIXED
          ? idx.prefixed
          : record.patternType === PatternType.LITERAL
            ? idx.literal
            : null;
      if (byName === null) continue;
      const list = byName.get(record.resourceName);
      if (list === undefined) byName.set(record.resourceName, [{ record }]);
      else list.push({ record });
    }
    for (const idx of index.values()) {
      const lengths = new Set([...idx.prefixed.keys()].map((p) => p.length));
      idx.prefixLengths.push(...[...lengths].sort((a, b) => a - b));
    }
    this.index = index;
  }
}

/** StandardAuthorizerData.findResult for one ACL of the resource: 'allow', 'deny' or null (no say). */
function decide(a: AclRecord, who: Requester, operation: number): 'allow' | 'deny' | null {
  if (a.principal !== who.principal && a.principal !== WILDCARD_PRINCIPAL) return null;
  if (a.host !== WILDCARD_HOST && a.host !== who.host) return null;
  const allow = a.permissionType === AclPermissionType.ALLOW;
  if (a.operation !== AclOperation.ALL) {
    if (allow) {
      if (operation === AclOperation.DESCRIBE) {
        if (!IMPLIES_DESCRIBE.has(a.operation)) return null;
      } else if (operation === AclOperation.DESCRIBE_CONFIGS) {
        if (!IMPLIES_DESCRIBE_CONFIGS.has(a.operation)) return null;
      } else if (operation !== a.operation) return null;
    } else if (operation !== a.operation) return null;
  }
  if (allow) return 'allow';
  return a.permissionType === AclPermissionType.DENY ? 'deny' : null;
}

const IMPLIES_DESCRIBE: ReadonlySet<number> = new Set([
  AclOperation.DESCRIBE,
  AclOperation.READ,
  AclOperation.WRITE,
  AclOperation.DELETE,
  AclOperation.ALTER,
]);
const IMPLIES_DESCRIBE_CONFIGS: ReadonlySet<number> = new Set([
  AclOperation.DESCRIBE_CONFIGS,
  AclOperation.ALTER_CONFIGS,
]);
