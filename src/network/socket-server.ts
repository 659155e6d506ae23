import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Clock } from '../common/clock.js';
import { LIMITS } from '../common/limits.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { FramePool } from '../protocol/framing.js';
import { ANONYMOUS, type SecurityProtocol } from '../security/principal.js';
import { rfc2253Subject, sslPrincipal } from '../security/ssl-principal.js';
import type { TlsServerSettings } from '../security/tls.js';
import { ConnectionSlots } from './connection-slots.js';
import { type DescriptorWatch, isDescriptorExhaustion } from './descriptor-watch.js';
import type { RequestHandler } from './request-handler.js';
import { type ConnectionSecurity, ServerConnection } from './server-connection.js';

export interface SocketServerConfig {
  /** The listener's name (`PLAINTEXT`, `SSL`, `INTERNAL`, ...), given to every connection. */
  readonly listenerName?: string;
  readonly securityProtocol?: SecurityProtocol;
  /** The TLS settings of an SSL listener; required for SSL, absent otherwise. */
  readonly tls?: TlsServerSettings;
  readonly host: string;
  /** 0 picks a free port (tests). */
  readonly port: number;
  /** socket.request.max.bytes */
  readonly maxFrameBytes: number;
  /** A SASL listener's sasl.server.max.receive.size: the largest request before authentication. */
  readonly maxFrameBytesUntilAuthenticated?: number;
  /** Per connection: frames read but not yet handled before reading pauses. */
  readonly maxQueuedRequestsPerConnection: number;
  /** Per connection: bytes of such frames before reading pauses (Kafka bounds queued.max.request.bytes). */
  readonly maxQueuedBytesPerConnection: number;
  /** connections.max.idle.ms */
  readonly connectionsMaxIdleMs: number;
  /** max.connections: new sockets beyond this are closed at once. */
  readonly maxConnections: number;
  /** The broker-wide max.connections count when the broker has several listeners (else this server's own). */
  readonly slots?: ConnectionSlots;
  /** The process's watch on its file descriptors, told of an accept that failed for want of one. */
  readonly descriptors?: DescriptorWatch;
}

/**
 * Idle buffers kept, across all connections, for assembling request frames that span socket reads
 * (produce requests of up to ~1 MB): enough for a few connections' worth of in-flight requests.
 */
const FRAME_POOL_BYTES = 16 * 1024 * 1024;

export interface BoundAddress {
  readonly host: string;
  readonly port: number;
}

/**
 * The listener (Kafka's SocketServer with its Acceptor and Processors folded into Node's event
 * loop): accepts sockets up to max.connections, gives each a ServerConnection, and closes
 * connections idle for longer than connections.max.idle.ms, checked periodically through the
 * injected scheduler. Owned by the broker; `close()` stops accepting and closes every connection.
 */
export class SocketServer {
  private readonly server: net.Server;
  private readonly connections = new Set<ServerConnection>();
  private nextConnectionIndex = 0;
  private cancelSweep: (() => void) | null = null;
  private bound: BoundAddress | null = null;
  private rejected = 0;
  private readonly framePool = new FramePool(FRAME_POOL_BYTES);

  private readonly listenerName: string;
  private readonly securityProtocol: SecurityProtocol;
  private readonly slots: ConnectionSlots;

  constructor(
    private readonly config: SocketServerConfig,
    private readonly handler: RequestHandler,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
  ) {
    this.securityProtocol = config.securityProtocol ?? 'PLAINTEXT';
    this.listenerName = config.listenerName ?? this.securityProtocol;
    this.slots = config.slots ?? new ConnectionSlots(config.maxConnections);
    this.server = this.createServer();
    // Errors before listening reject listen(); later ones are logged and the listener carries on.
    // An accept without a descriptor left is the descriptor watch's one line, not a line each.
    this.server.on('error', (e) => {
      if (!this.bound) return;
      if (isDescriptorExhaustion(e) && config.descriptors !== undefined) config.descriptors.exhausted(e);
      else this.logger.warn(`listener error: ${e.message}`);
    });
  }

  /**
   * The one place where a listener's security protocol decides what happens to a socket before
   * its requests are served: PLAINTEXT serves it at once; SSL first completes the TLS handshake
   * (a failed one is one log line naming the client, and the socket is gone) and takes the
   * principal from the client certificate. SASL_PLAINTEXT and SASL_SSL do the same, and their
   * connections stay ANONYMOUS until the request router's SASL exchange authenticates them.
   */
  private createServer(): net.Server {
    switch (this.securityProtocol) {
      case 'PLAINTEXT':
      case 'SASL_PLAINTEXT':
        return net.createServer({ noDelay: true }, (socket) => {
          if (this.admit(socket))
            this.accept(socket, { ...this.listener(), principal: ANONYMOUS, plainSocket: true });
        });
      case 'SSL':
      case 'SASL_SSL': {
        const settings = this.config.tls;
        if (settings === undefined)
          throw new Error(`listener ${this.listenerName}: ${this.securityProtocol} without TLS settings`);
        const sasl = this.securityProtocol === 'SASL_SSL';
        const server = tls.createServer(
          { ...settings.options, noDelay: true, handshakeTimeout: LIMITS.tlsHandshakeMs },
          (socket) => {
            // `requested`: a certificate that does not verify is refused; none at all is ANONYMOUS.
            const peer = socket.getPeerX509Certificate();
            const refuse = (why: string): void => {
              this.logger.warn(
                `SSL handshake failed on listener ${this.listenerName} from ${socket.remoteAddress}:${socket.remotePort}: ${why}`,
              );
              socket.destroy();
            };
            if (peer !== undefined && !socket.authorized)
              return refuse(`client certificate not trusted (${socket.authorizationError})`);
            // SASL_SSL: the SASL exchange says who the client is, not the certificate.
            const principal = sasl ? ANONYMOUS : sslPrincipal(peer, settings.principalMapper);
            if (principal === null)
              return refuse(
                `no ssl.principal.mapping.rules rule applies to ${rfc2253Subject(peer!.subject)}`,
              );
            this.accept(socket, { ...this.listener(), principal, plainSocket: false });
          },
        );
        // The slot is taken before the handshake: a flood of stalled handshakes meets max.connections.
        server.prependListener('connection', (raw: net.Socket) => {
          if (!this.admit(raw)) raw.destroy();
        });
        server.on('tlsClientError', (e, socket) => {
          this.logger.warn(
            `SSL handshake failed on listener ${this.listenerName} from ${socket.remoteAddress}:${socket.remotePort}: ${e.message}`,
          );
          socket.destroy();
        });
        return server;
      }
      default:
        throw new Error(`listener ${this.listenerName}: unknown security protocol ${this.securityProtocol}`);
    }
  }

  private listener(): Pick<ConnectionSecurity, 'listenerName' | 'securityProtocol'> {
    return { listenerName: this.listenerName, securityProtocol: this.securityProtocol };
  }

  get connectionCount(): number {
    return this.connections.size;
  }

  /** Sockets closed at accept because max.connections was reached. */
  get rejectedConnections(): number {
    return this.rejected;
  }

  get address(): BoundAddress {
    if (!this.bound) throw new Error('the socket server is not listening');
    return this.bound;
  }

  listen(): Promise<BoundAddress> {
    return new Promise((resolve, reject) => {
      const onError = (e: Error): void => reject(e);
      this.server.once('error', onError);
      this.server.listen(this.config.port, this.config.host, () => {
        this.server.off('error', onError);
        const a = this.server.address() as net.AddressInfo;
        this.bound = { host: this.config.host, port: a.port };
        this.scheduleSweep();
        resolve(this.bound);
      });
    });
  }

  /**
   * Takes a max.connections slot for a new socket, given back when it closes; false: refused and
   * closed. A refusal is logged when it begins an episode (ConnectionSlots), and the episode's end
   * with how many were refused: one line each, however fast clients retry.
   */
  private admit(socket: net.Socket): boolean {
    const address = socket.remoteAddress ?? '?';
    const answer = this.slots.tryTake(address);
    if (!answer.taken) {
      this.rejected++;
      if (answer.first)
        this.logger.warn(
          answer.limit === 'max.connections'
            ? `rejecting connection from ${socket.remoteAddress}:${socket.remotePort} on listener ${this.listenerName}: max.connections ${this.slots.max} reached (further refusals are counted, not logged, until a connection closes)`
            : // Kafka's Acceptor line.
              `Rejected connection from ${kafkaAddress(address)}, address already has the configured maximum of ${this.slots.maxPerIp} connections.`,
        );
      socket.destroy();
      return false;
    }
    socket.once('close', () => {
      for (const ended of this.slots.give(address))
        this.logger.info(
          ended.limit === 'max.connections'
            ? `a connection closed on listener ${this.listenerName}: accepting connections again after ${ended.refused} refused at max.connections ${this.slots.max}`
            : `a connection from ${kafkaAddress(ended.address)} closed: accepting its connections again after ${ended.refused} refused at max.connections.per.ip ${this.slots.maxPerIp}`,
        );
    });
    return true;
  }

  private accept(socket: net.Socket, security: ConnectionSecurity): void {
    const local = this.bound ? `${this.bound.host}:${this.bound.port}` : '?';
    const id = `${local}-${socket.remoteAddress}:${socket.remotePort}-${this.nextConnectionIndex++}`;
    const conn = new ServerConnection(
      id,
      socket,
      this.handler,
      {
        maxFrameBytes: this.config.maxFrameBytes,
        ...(this.config.maxFrameBytesUntilAuthenticated !== undefined && {
          maxFrameBytesUntilAuthenticated: this.config.maxFrameBytesUntilAuthenticated,
        }),
        maxQueuedRequests: this.config.maxQueuedRequestsPerConnection,
        maxQueuedBytes: this.config.maxQueuedBytesPerConnection,
      },
      this.clock,
      this.scheduler,
      this.logger,
      (c) => this.connections.delete(c),
      this.framePool,
      security,
    );
    this.connections.add(conn);
  }

  // A sweep at a quarter of the idle limit closes a connection at most 25% late, and costs one
  // pass over the connections per period.
  private scheduleSweep(): void {
    const idleMs = this.config.connectionsMaxIdleMs;
    if (!Number.isFinite(idleMs) || idleMs < 0) return;
    const periodMs = Math.max(1, Math.min(Math.floor(idleMs / 4), 30_000));
    const run = (): void => {
      this.closeIdle();
      this.cancelSweep = this.scheduler.schedule('idle-connection-sweep', periodMs, run);
    };
    this.cancelSweep = this.scheduler.schedule('idle-connection-sweep', periodMs, run);
  }

  /** Closes connections idle longer than connections.max.idle.ms; returns how many. */
  closeIdle(): number {
    const now = this.clock.nowMs();
    let closed = 0;
    for (const conn of [...this.connections]) {
      if (conn.isIdle(now, this.config.connectionsMaxIdleMs)) {
        this.logger.info(
          `closing idle connection ${conn.id} (clientId ${JSON.stringify(conn.clientId)}): no activity for more than connections.max.idle.ms ${this.config.connectionsMaxIdleMs}`,
        );
        conn.close(null);
        closed++;
      }
    }
    return closed;
  }

  async close(): Promise<void> {
    this.cancelSweep?.();
    this.cancelSweep = null;
    const closing = new Promise<void>((resolve) => this.server.close(() => resolve()));
    for (const conn of [...this.connections]) conn.close(null);
    await closing;
  }
}

/** An address as Kafka prints an InetAddress: /ip, an IPv4-mapped IPv6 address as its IPv4 one. */
function kafkaAddress(address: string): string {
  return `/${address.replace(/^::ffff:(?=\d+\.\d+\.\d+\.\d+$)/i, '')}`;
}

/**
 * Fails with one line when `host:port` cannot be listened on (in use, not an address of this
 * machine), by binding it for a moment: a broker checks its listener before it writes anything to
 * its log dirs, as an operator would expect of a bad `listeners`. Port 0 always passes.
 */
export function checkListenable(host: string, port: number): Promise<void> {
  if (port === 0) return Promise.resolve();
  return new Promise((resolve, reject) => {
    const probe = net.createServer();
    probe.once('error', (e: NodeJS.ErrnoException) =>
      reject(
        Object.assign(
          new Error(
            `cannot listen on ${host}:${port}: ${e.code === 'EADDRINUSE' ? 'the port is in use' : e.message}`,
          ),
          { code: e.code },
        ),
      ),
    );
    probe.listen(port, host, () => probe.close(() => resolve()));
  });
}
