/**
 * The one authorization call every handler makes (Kafka's AuthHelper): may this request's
 * principal, from this host, perform an operation on a resource. Without an authorizer
 * (authorizer.class.name empty) everything is allowed and authorizedOperations lists every
 * operation of the resource type, as Kafka does. Owned by the broker's composition root;
 * stateless apart from the authorizer's index of the image's ACLs.
 */
import type { ConnectionInfo } from '../network/request-handler.js';
import { CLUSTER_NAME, type Operation, ResourceType, SUPPORTED_OPERATIONS } from '../security/acl.js';
import type { AclAuthorizer, Requester } from '../security/authorizer.js';
import { principalToString } from '../security/principal.js';

/** What authorization reads of a request: its connection. */
export interface AuthorizationContext {
  readonly connection: ConnectionInfo;
}

/** The client's IP address as Kafka's InetAddress.getHostAddress (no port, IPv4-mapped as IPv4). */
export function clientHostAddress(remoteAddress: string): string {
  const colon = remoteAddress.lastIndexOf(':');
  const host = colon < 0 ? remoteAddress : remoteAddress.slice(0, colon);
  return host.replace(/^\[|\]$/g, '').replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '');
}

export class Authorization {
  constructor(readonly authorizer: AclAuthorizer | null) {}

  /** An authorizer is configured (the ACL APIs answer SECURITY_DISABLED otherwise). */
  get enabled(): boolean {
    return this.authorizer !== null;
  }

  requester(ctx: AuthorizationContext): Requester {
    return {
      principal: principalToString(ctx.connection.principal),
      host: clientHostAddress(ctx.connection.remoteAddress),
    };
  }

  authorize(ctx: AuthorizationContext, operation: Operation, resourceType: number, name: string): boolean {
    if (this.authorizer === null) return true;
    return this.authorizer.authorize(this.requester(ctx), operation, resourceType, name);
  }

  authorizeCluster(ctx: AuthorizationContext, operation: Operation): boolean {
    return this.authorize(ctx, operation, ResourceType.CLUSTER, CLUSTER_NAME);
  }

  /** The names of `names` the request may perform `operation` on (each asked once). */
  filter(
    ctx: AuthorizationContext,
    operation: Operation,
    resourceType: number,
    names: Iterable<string>,
  ): Set<string> {
    const allowed = new Set<string>();
    if (this.authorizer === null) {
      for (const n of names) allowed.add(n);
      return allowed;
    }
    const who = this.requester(ctx);
    const asked = new Set<string>();
    for (const n of names) {
      if (asked.has(n)) continue;
      asked.add(n);
      if (this.authorizer.authorize(who, operation, resourceType, n)) allowed.add(n);
    }
    return allowed;
  }

  /** Authorizer.authorizeByResourceType: may the request do `operation` on any resource of the type. */
  authorizeByResourceType(ctx: AuthorizationContext, operation: Operation, resourceType: number): boolean {
    if (this.authorizer === null) return true;
    return this.authorizer.authorizeByResourceType(this.requester(ctx), operation, resourceType);
  }

  /** The 32-bit field of authorized operations (bit = operation code) Kafka's responses carry. */
  authorizedOperations(ctx: AuthorizationContext, resourceType: number, name: string): number {
    const ops =
      this.authorizer === null
        ? (SUPPORTED_OPERATIONS.get(resourceType) ?? [])
        : this.authorizer.authorizedOperations(this.requester(ctx), resourceType, name);
    let field = 0;
    for (const op of ops) field |= 1 << op;
    return field;
  }
}
