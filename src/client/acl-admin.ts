/** CreateAcls / DescribeAcls / DeleteAcls for the tools (Kafka's Admin.createAcls/describeAcls/deleteAcls). */
import { type AclBinding, type AclBindingFilter, bindingOf } from '../security/acl.js';
import { lazyApi } from './apis.js';
import { checkCode } from './errors.js';
import type { KafkaClient } from './kafka-client.js';

export const DescribeAclsApi = lazyApi(29, 'DescribeAcls', 1, 3, async () => ({
  request: (await import('../protocol/generated/DescribeAclsRequest.js')).DescribeAclsRequestCodec,
  response: (await import('../protocol/generated/DescribeAclsResponse.js')).DescribeAclsResponseCodec,
}));

export const CreateAclsApi = lazyApi(30, 'CreateAcls', 1, 3, async () => ({
  request: (await import('../protocol/generated/CreateAclsRequest.js')).CreateAclsRequestCodec,
  response: (await import('../protocol/generated/CreateAclsResponse.js')).CreateAclsResponseCodec,
}));

export const DeleteAclsApi = lazyApi(31, 'DeleteAcls', 1, 3, async () => ({
  request: (await import('../protocol/generated/DeleteAclsRequest.js')).DeleteAclsRequestCodec,
  response: (await import('../protocol/generated/DeleteAclsResponse.js')).DeleteAclsResponseCodec,
}));

/** A filter as DescribeAcls and DeleteAcls carry it. */
function wireFilter(f: AclBindingFilter) {
  return {
    resourceTypeFilter: f.resourceType,
    resourceNameFilter: f.resourceName,
    patternTypeFilter: f.patternType,
    principalFilter: f.principal,
    hostFilter: f.host,
    operation: f.operation,
    permissionType: f.permissionType,
  };
}

/** Creates the bindings; the first refusal throws with the broker's code and message. */
export async function createAcls(client: KafkaClient, bindings: readonly AclBinding[]): Promise<void> {
  if (bindings.length === 0) return;
  const resp = await client.retry(() =>
    client.send({ kind: 'any' }, CreateAclsApi, () => ({
      creations: bindings.map((a) => ({
        resourceType: a.resourceType,
        resourceName: a.resourceName,
        resourcePatternType: a.patternType,
        principal: a.principal,
        host: a.host,
        operation: a.operation,
        permissionType: a.permissionType,
      })),
    })),
  );
  for (const r of resp.results) checkCode(r.errorCode, r.errorMessage);
}

/** The bindings the filter matches. */
export async function describeAcls(client: KafkaClient, f: AclBindingFilter): Promise<AclBinding[]> {
  const resp = await client.retry(() => client.send({ kind: 'any' }, DescribeAclsApi, () => wireFilter(f)));
  checkCode(resp.errorCode, resp.errorMessage);
  return resp.resources.flatMap((r) =>
    r.acls.map((a) => ({
      resourceType: r.resourceType,
      resourceName: r.resourceName,
      patternType: r.patternType,
      principal: a.principal,
      host: a.host,
      operation: a.operation,
      permissionType: a.permissionType,
    })),
  );
}

/** Deletes what the filters match; returns the bindings deleted. */
export async function deleteAcls(
  client: KafkaClient,
  filters: readonly AclBindingFilter[],
): Promise<AclBinding[]> {
  if (filters.length === 0) return [];
  const resp = await client.retry(() =>
    client.send({ kind: 'any' }, DeleteAclsApi, () => ({
      filters: filters.map(wireFilter),
    })),
  );
  const deleted: AclBinding[] = [];
  for (const r of resp.filterResults) {
    checkCode(r.errorCode, r.errorMessage);
    for (const m of r.matchingAcls) {
      checkCode(m.errorCode, m.errorMessage);
      deleted.push(bindingOf(m));
    }
  }
  return deleted;
}
