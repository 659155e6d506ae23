import * as net from 'node:net';
import * as tls from 'node:tls';
import type { Scheduler } from '../common/scheduler.js';
import type { MessageCodec } from '../protocol/codec-runtime.js';
import { DEFAULT_MAX_FRAME_BYTES, type FramePool, FrameReader } from '../protocol/framing.js';
import { encodeRequest, readResponse } from '../protocol/messages.js';
import { ProtocolError } from '../protocol/protocol-error.js';
import { ReceiveLowWater } from './receive-low-water.js';
import type { SaslClientCredentials } from './sasl-client-auth.js';

export interface ClientConnectionOptions {
  readonly clientId: string;
  /** Requests sent and not yet answered; further sends wait for a slot. */
  readonly maxInFlight?: number;
  /** Largest response frame accepted. */
  readonly maxFrameBytes?: number;
  /**
   * request.timeout.ms: a request unanswered this long fails the connection, as Kafka's
   * NetworkClient disconnects (responses are ordered, so nothing behind it can arrive either).
   * Needs `scheduler`; without one requests wait as long as the connection lives.
   */
  readonly requestTimeoutMs?: number;
  readonly scheduler?: Scheduler;
  /**
   * Where response frames spanning socket reads are assembled (FrameReader's pool): the caller
   * gives each response's buffers back (FramePool.release) once nothing refers to them.
   */
  readonly framePool?: FramePool;
  /**
   * Read the socket into one reused buffer of this size (Node's `onread`) instead of a fresh 64
   * KiB buffer and a 'data' event per read: for connections that receive large responses (a
   * replica fetcher's: ~1/3 of the receive CPU on loopback). Every frame is then copied out once.
   */
  readonly readBufferBytes?: number;
  /**
   * Connect with TLS (security.protocol SSL): trust store, client certificate, host name checks.
   * The connection is ready once the handshake has verified the broker; readBufferBytes does not
   * apply (TLS hands over decrypted data).
   */
  readonly tls?: tls.ConnectionOptions;
  /**
   * Authenticate with SASL (security.protocol SASL_PLAINTEXT / SASL_SSL) before the connection is
   * handed out: SaslHandshake v1 and SaslAuthenticate v2 (sasl-client-auth.ts).
   */
  readonly sasl?: SaslClientCredentials;
}

/** A request went unanswered for request.timeout.ms. */
export class RequestTimeoutError extends Error {
  override readonly name = 'RequestTimeoutError';
}

interface Pending {
  apiKey: number;
  apiVersion: number;
  codec: MessageCodec<unknown>;
  resolve: (body: unknown) => void;
  reject: (e: Error) => void;
  cancelTimeout: () => void;
}

/** The connection was closed (by either side) before a response arrived. */
export class ConnectionClosedError extends Error {
  override readonly name = 'ConnectionClosedError';
}

/**
 * The client side of one Kafka connection, for tools, tests and (later) replica fetchers: sends
 * requests with increasing correlation ids and resolves each with the response that carries its
 * id. Kafka answers a connection's requests in order, so a response for any other id than the
 * oldest pending one is a protocol violation and closes the connection. Owned by its caller,
 * which must `close()` it; a failure rejects every pending request.
 */
export class ClientConnection {
  private nextCorrelationId = 1;
  private readonly pending = new Map<number, Pending>();
  private readonly waiters: (() => void)[] = [];
  private readonly reader: FrameReader;
  private failure: Error | null = null;
  private readonly maxInFlight: number;
  /** Slots taken: requests sent or about to be, reserved synchronously so concurrent sends cannot overshoot. */
  private slotsTaken = 0;
  private readonly lowWater: ReceiveLowWater | null;

  private constructor(
    private readonly socket: net.Socket,
    private readonly options: ClientConnectionOptions,
  ) {
    this.maxInFlight = options.maxInFlight ?? 5;
    this.reader = new FrameReader({
      maxFrameBytes: options.maxFrameBytes ?? DEFAULT_MAX_FRAME_BYTES,
      pool: options.framePool,
      copyFrames: options.readBufferBytes !== undefined,
    });
    socket.setNoDelay(true);
    this.lowWater =
      options.readBufferBytes === undefined ? null : ReceiveLowWater.of(socket, options.readBufferBytes);
    // With readBufferBytes the socket hands its reads to connect()'s onread callback instead.
    if (options.readBufferBytes === undefined) socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('error', (e) => this.fail(e));
    socket.on('close', () => this.fail(new ConnectionClosedError('connection closed')));
  }

  static connect(host: string, port: number, options: ClientConnectionOptions): Promise<ClientConnection> {
    const connecting =
      options.tls !== undefined
        ? ClientConnection.connectTls(host, port, options, options.tls)
        : ClientConnection.connectPlain(host, port, options);
    const sasl = options.sasl;
    if (sasl === undefined) return connecting;
    return connecting.then(async (conn) => {
      try {
        // Loaded only by a connection that authenticates: a tool on a PLAINTEXT listener loads the
        // codecs of the APIs it sends and no others (test/cli/startup.test.ts).
        const { saslAuthenticate } = await import('./sasl-client-auth.js');
        await saslAuthenticate(conn, sasl);
      } catch (e) {
        conn.close();
        throw e;
      }
      return conn;
    });
  }

  private static connectPlain(
    host: string,
    port: number,
    options: ClientConnectionOptions,
  ): Promise<ClientConnection> {
    return new Promise((resolve, reject) => {
      let conn: ClientConnection | null = null;
      const socket =
        options.readBufferBytes === undefined
          ? net.connect({ host, port })
          : net.connect({
              host,
              port,
              onread: {
                buffer: Buffer.allocUnsafe(options.readBufferBytes),
                // The buffer is reused by the next read: the frame reader copies what it keeps.
                callback: (n: number, buf: Uint8Array): boolean => {
                  conn?.onData(Buffer.from(buf.buffer, buf.byteOffset, n));
                  return true;
                },
              },
            });
      const onError = (e: Error): void => reject(e);
      socket.once('error', onError);
      socket.once('connect', () => {
        socket.off('error', onError);
        conn = new ClientConnection(socket, options);
        resolve(conn);
      });
    });
  }

  private static connectTls(
    host: string,
    port: number,
    options: ClientConnectionOptions,
    tlsOptions: tls.ConnectionOptions,
  ): Promise<ClientConnection> {
    const { readBufferBytes: _ignored, ...rest } = options;
    return new Promise((resolve, reject) => {
      // SNI only for names (RFC 6066 forbids addresses); the certificate is checked against `host`.
      const servername = net.isIP(host) === 0 ? host : undefined;
      const socket = tls.connect({
        ...tlsOptions,
        host,
        port,
        ...(servername !== undefined && { servername }),
      });
      const onError = (e: Error): void => {
        socket.destroy();
        reject(e);
      };
      socket.once('error', onError);
      socket.once('secureConnect', () => {
        socket.off('error', onError);
        resolve(new ClientConnection(socket, rest));
      });
    });
  }

  get inFlight(): number {
    return this.pending.size;
  }

  /** Sends a request and resolves with the decoded response body. */
  async send<Req, Resp>(
    apiKey: number,
    apiVersion: number,
    requestCodec: MessageCodec<Req>,
    request: Req,
    responseCodec: MessageCodec<Resp>,
  ): Promise<Resp> {
    await this.slot();
    const correlationId = this.nextCorrelationId++;
    const chunks = encodeRequest(
      {
        requestApiKey: apiKey,
        requestApiVersion: apiVersion,
        correlationId,
        clientId: this.options.clientId,
      },
      requestCodec,
      request,
    );
    const response = new Promise<Resp>((resolve, reject) => {
      const { requestTimeoutMs, scheduler } = this.options;
      const cancelTimeout =
        requestTimeoutMs !== undefined && scheduler !== undefined
          ? scheduler.schedule('client-request-timeout', requestTimeoutMs, () =>
              this.fail(
                new RequestTimeoutError(
                  `request ${correlationId} (API ${apiKey} v${apiVersion}) got no response within ${requestTimeoutMs} ms`,
                ),
              ),
            )
          : () => {};
      this.pending.set(correlationId, {
        apiKey,
        apiVersion,
        codec: responseCodec as MessageCodec<unknown>,
        resolve: resolve as (body: unknown) => void,
        reject,
        cancelTimeout,
      });
    });
    this.writeChunks(chunks);
    return response;
  }

  /** Sends a request that gets no response (Produce with acks=0). */
  async sendOneWay<Req>(
    apiKey: number,
    apiVersion: number,
    requestCodec: MessageCodec<Req>,
    request: Req,
  ): Promise<void> {
    if (this.failure) throw this.failure;
    const correlationId = this.nextCorrelationId++;
    this.writeChunks(
      encodeRequest(
        {
          requestApiKey: apiKey,
          requestApiVersion: apiVersion,
          correlationId,
          clientId: this.options.clientId,
        },
        requestCodec,
        request,
      ),
    );
  }

  /** Writes raw bytes (tests of malformed input). */
  writeRaw(bytes: Buffer): void {
    this.socket.write(bytes);
  }

  private writeChunks(chunks: Buffer[]): void {
    this.socket.cork();
    for (const c of chunks) this.socket.write(c);
    this.socket.uncork();
  }

  private async slot(): Promise<void> {
    for (;;) {
      if (this.failure) throw this.failure;
      if (this.slotsTaken < this.maxInFlight) {
        this.slotsTaken++;
        return;
      }
      await new Promise<void>((resolve) => this.waiters.push(resolve));
    }
  }

  private onData(chunk: Buffer): void {
    let frames: Buffer[];
    try {
      frames = this.reader.push(chunk);
    } catch (e) {
      this.fail(e as Error);
      return;
    }
    this.lowWater?.update(this.reader.missingBytes);
    for (const f of frames) {
      if (f.length < 4) {
        this.fail(new ProtocolError(`response frame of ${f.length} bytes`));
        return;
      }
      const correlationId = f.readInt32BE(0);
      const oldest = this.pending.keys().next();
      const p = this.pending.get(correlationId);
      if (!p || oldest.value !== correlationId) {
        this.fail(new ProtocolError(`response with unexpected correlation id ${correlationId}`));
        return;
      }
      this.pending.delete(correlationId);
      this.slotsTaken--;
      p.cancelTimeout();
      try {
        p.resolve(readResponse(f, p.apiKey, p.apiVersion, p.codec).body);
      } catch (e) {
        p.reject(e as Error);
      }
      this.waiters.shift()?.();
    }
  }

  private fail(e: Error): void {
    if (this.failure) return;
    this.failure = e;
    for (const p of this.pending.values()) {
      p.cancelTimeout();
      p.reject(e);
    }
    this.pending.clear();
    for (const w of this.waiters.splice(0)) w();
    this.socket.destroy();
  }

  /** Closes the socket; pending requests are rejected. */
  close(): void {
    this.fail(new ConnectionClosedError('connection closed by the client'));
  }

  /** Resolves when the peer closes the connection (tests of server-side closes). */
  closed(): Promise<void> {
    if (this.socket.destroyed) return Promise.resolve();
    return new Promise((resolve) => this.socket.once('close', () => resolve()));
  }
}
