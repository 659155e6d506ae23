/**
 * ACLs as the metadata store holds them (keys `acls/<id>`, see keys.ts): one binding per key, in
 * Kafka's numeric codes (ResourceType, PatternType, AclOperation, AclPermissionType) so the store
 * and the wire agree. The id is the binding itself, encoded: creating an ACL that exists writes the
 * same key again, which is Kafka's AclControlManager rule (a duplicate is accepted, stored once).
 * The model that reads them (matching, authorization) lives in src/security/acl.ts.
 */

export interface AclRecord {
  readonly resourceType: number;
  readonly resourceName: string;
  readonly patternType: number;
  /** `User:alice`, `User:*`. */
  readonly principal: string;
  /** An IP address or `*`. */
  readonly host: string;
  readonly operation: number;
  readonly permissionType: number;
}

/** The key id of a binding: its fields in a fixed order, each URI-encoded (no '/' in the id). */
export function aclId(a: AclRecord): string {
  return [
    a.resourceType,
    a.patternType,
    encodeURIComponent(a.resourceName),
    encodeURIComponent(a.principal),
    encodeURIComponent(a.host),
    a.operation,
    a.permissionType,
  ].join(',');
}

/** The record stored for a binding, with exactly its fields (no stray keys from a request body). */
export function aclRecordOf(a: AclRecord): AclRecord {
  return {
    resourceType: a.resourceType,
    resourceName: a.resourceName,
    patternType: a.patternType,
    principal: a.principal,
    host: a.host,
    operation: a.operation,
    permissionType: a.permissionType,
  };
}
