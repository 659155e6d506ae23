/**
 * FindCoordinator: the coordinator of a group (of a transactional id) is the leader of its
 * __consumer_offsets (__transaction_state) partition. Which broker leads it is the broker's
 * knowledge, passed in as `locate`.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { FindCoordinatorRequest } from '../protocol/generated/FindCoordinatorRequest.js';
import type { Coordinator, FindCoordinatorResponse } from '../protocol/generated/FindCoordinatorResponse.js';

export interface CoordinatorNode {
  nodeId: number;
  host: string;
  port: number;
}

/** FindCoordinator key types (CoordinatorType in Kafka). */
export const KEY_TYPE_GROUP = 0;
export const KEY_TYPE_TRANSACTION = 1;

export function findCoordinator(
  version: number,
  req: FindCoordinatorRequest,
  locate: (key: string) => CoordinatorNode | null,
  /** The key type the caller coordinates; other key types are INVALID_REQUEST. */
  coordinated: number = KEY_TYPE_GROUP,
): FindCoordinatorResponse {
  const keyType = version >= 1 ? req.keyType : KEY_TYPE_GROUP;
  const keys = version >= 4 ? req.coordinatorKeys : [req.key];
  const results: Coordinator[] = keys.map((key) => {
    if (keyType !== coordinated) {
      return {
        key,
        nodeId: -1,
        host: '',
        port: -1,
        errorCode: ErrorCode.INVALID_REQUEST,
        errorMessage: `key type ${keyType} is not coordinated by this broker`,
      };
    }
    const node = locate(key);
    if (node === null) {
      return {
        key,
        nodeId: -1,
        host: '',
        port: -1,
        errorCode: ErrorCode.COORDINATOR_NOT_AVAILABLE,
        errorMessage: 'The coordinator is not available.',
      };
    }
    return {
      key,
      nodeId: node.nodeId,
      host: node.host,
      port: node.port,
      errorCode: ErrorCode.NONE,
      errorMessage: null,
    };
  });
  if (version >= 4) {
    return {
      throttleTimeMs: 0,
      errorCode: 0,
      errorMessage: null,
      nodeId: 0,
      host: '',
      port: 0,
      coordinators: results,
    };
  }
  const r = results[0]!;
  return {
    throttleTimeMs: 0,
    errorCode: r.errorCode,
    errorMessage: version >= 1 ? r.errorMessage : null,
    nodeId: r.nodeId,
    host: r.host,
    port: r.port,
    coordinators: [],
  };
}
