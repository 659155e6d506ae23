/**
 * CreateAcls, DescribeAcls and DeleteAcls (Kafka's AclApis): CLUSTER ALTER to change ACLs and
 * CLUSTER DESCRIBE to list them, SECURITY_DISABLED when no authorizer is configured, each binding
 * checked as AclControlManager does (INVALID_REQUEST), the changes written by the controller to
 * the metadata store (acls/<id>), where every broker's image follows them.
 */
import { LIMITS } from '../../common/limits.js';
import { type AclRecord, aclRecordOf } from '../../metadata/acls.js';
import type { ApiResult } from '../../metadata/cluster-metadata.js';
import type { CreateAclsRequest } from '../../protocol/generated/CreateAclsRequest.js';
import type { CreateAclsResponse } from '../../protocol/generated/CreateAclsResponse.js';
import type { DeleteAclsRequest } from '../../protocol/generated/DeleteAclsRequest.js';
import type {
  DeleteAclsMatchingAcl,
  DeleteAclsResponse,
} from '../../protocol/generated/DeleteAclsResponse.js';
import type { DescribeAclsRequest } from '../../protocol/generated/DescribeAclsRequest.js';
import type {
  DescribeAclsResource,
  DescribeAclsResponse,
} from '../../protocol/generated/DescribeAclsResponse.js';
import { ErrorCode } from '../../protocol/generated/errors.js';
import {
  type AclBindingFilter,
  AclOperation,
  filterMatches,
  invalidBinding,
  invalidFilter,
} from '../../security/acl.js';
import type { BrokerServices, RequestContext } from '../handler-context.js';

const { SECURITY_DISABLED, CLUSTER_AUTHORIZATION_FAILED, INVALID_REQUEST } = ErrorCode;
const NO_AUTHORIZER = 'No Authorizer is configured.';
/** Over Kafka's records per controller operation, the whole change fails (its BoundedList refuses it). */
const TOO_MANY = {
  errorCode: ErrorCode.UNKNOWN_SERVER_ERROR,
  errorMessage: `More than ${LIMITS.aclsPerRequest} ACLs in one request`,
};
const CLUSTER_DENIED = 'Cluster authorization failed.';

/** The request-level refusal every ACL API shares, or null to go on. */
function refusal(
  b: BrokerServices,
  ctx: RequestContext,
  operation: typeof AclOperation.ALTER | typeof AclOperation.DESCRIBE,
): { code: number; message: string } | null {
  if (!b.authorization.authorizeCluster(ctx, operation))
    return { code: CLUSTER_AUTHORIZATION_FAILED, message: CLUSTER_DENIED };
  if (!b.authorization.enabled) return { code: SECURITY_DISABLED, message: NO_AUTHORIZER };
  return null;
}

function filterOf(f: DescribeAclsRequest | DeleteAclsRequest['filters'][number]): AclBindingFilter {
  return {
    resourceType: f.resourceTypeFilter,
    resourceName: f.resourceNameFilter,
    patternType: f.patternTypeFilter,
    principal: f.principalFilter,
    host: f.hostFilter,
    operation: f.operation,
    permissionType: f.permissionType,
  };
}

function matching(b: BrokerServices, filter: AclBindingFilter): [string, AclRecord][] {
  return [...(b.metadata.image().acls ?? new Map<string, AclRecord>()).entries()].filter(([, a]) =>
    filterMatches(filter, a),
  );
}

export async function handleCreateAcls(
  b: BrokerServices,
  ctx: RequestContext,
  req: CreateAclsRequest,
): Promise<CreateAclsResponse> {
  const refused = refusal(b, ctx, AclOperation.ALTER);
  if (refused !== null) {
    const results = req.creations.map(() => ({ errorCode: refused.code, errorMessage: refused.message }));
    return { throttleTimeMs: 0, results };
  }
  const bindings: AclRecord[] = req.creations.map((c) => ({
    resourceType: c.resourceType,
    resourceName: c.resourceName,
    patternType: c.resourcePatternType,
    principal: c.principal,
    host: c.host,
    operation: c.operation,
    permissionType: c.permissionType,
  }));
  const errors = bindings.map(invalidBinding);
  const valid = bindings.filter((_, i) => errors[i] === null);
  const stored = await bounded(valid.length, () => b.metadata.controller.createAcls(valid));
  const results = errors.map((e) =>
    e !== null
      ? { errorCode: INVALID_REQUEST, errorMessage: e }
      : { errorCode: stored!.errorCode, errorMessage: stored!.errorMessage },
  );
  return { throttleTimeMs: 0, results };
}

export async function handleDescribeAcls(
  b: BrokerServices,
  ctx: RequestContext,
  req: DescribeAclsRequest,
): Promise<DescribeAclsResponse> {
  const none = { throttleTimeMs: 0, resources: [] };
  const refused = refusal(b, ctx, AclOperation.DESCRIBE);
  if (refused !== null) return { ...none, errorCode: refused.code, errorMessage: refused.message };
  const filter = filterOf(req);
  const bad = invalidFilter(filter);
  if (bad !== null) return { ...none, errorCode: INVALID_REQUEST, errorMessage: bad };
  const byPattern = new Map<string, DescribeAclsResource>();
  const found = matching(b, filter)
    .map(([, a]) => a)
    .sort((x, y) => x.resourceType - y.resourceType || compare(x.resourceName, y.resourceName));
  for (const a of found) {
    const key = `${a.resourceType}|${a.patternType}|${a.resourceName}`;
    let r = byPattern.get(key);
    if (r === undefined) {
      r = {
        resourceType: a.resourceType,
        resourceName: a.resourceName,
        patternType: a.patternType,
        acls: [],
      };
      byPattern.set(key, r);
    }
    r.acls.push({
      principal: a.principal,
      host: a.host,
      operation: a.operation,
      permissionType: a.permissionType,
    });
  }
  return { ...none, errorCode: 0, errorMessage: null, resources: [...byPattern.values()] };
}

export async function handleDeleteAcls(
  b: BrokerServices,
  ctx: RequestContext,
  req: DeleteAclsRequest,
): Promise<DeleteAclsResponse> {
  const refused = refusal(b, ctx, AclOperation.ALTER);
  if (refused !== null) {
    const filterResults = req.filters.map(() => ({
      errorCode: refused.code,
      errorMessage: refused.message,
      matchingAcls: [],
    }));
    return { throttleTimeMs: 0, filterResults };
  }
  const perFilter = req.filters.map((f) => {
    const filter = filterOf(f);
    const bad = invalidFilter(filter);
    return bad !== null ? { bad, found: [] } : { bad: null, found: matching(b, filter) };
  });
  const ids = [...new Set(perFilter.flatMap((f) => f.found.map(([id]) => id)))];
  const deleted = await bounded(ids.length, () => b.metadata.controller.deleteAcls(ids));
  const filterResults = perFilter.map(({ bad, found }) => {
    if (bad !== null) return { errorCode: INVALID_REQUEST, errorMessage: bad, matchingAcls: [] };
    const matchingAcls: DeleteAclsMatchingAcl[] = found.map(([, a]) => ({
      errorCode: deleted?.errorCode ?? 0,
      errorMessage: deleted?.errorMessage ?? null,
      ...aclRecordOf(a),
    }));
    return { errorCode: 0, errorMessage: null, matchingAcls };
  });
  return { throttleTimeMs: 0, filterResults };
}

/** The controller's change of `count` ACLs: none when there is nothing to do, refused over the bound. */
async function bounded(count: number, change: () => Promise<ApiResult>): Promise<ApiResult | null> {
  if (count === 0) return null;
  return count > LIMITS.aclsPerRequest ? TOO_MANY : change();
}

function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}
