import type { Socket } from 'node:net';
import type { Clock } from '../common/clock.js';
import type { Logger } from '../common/logger.js';
import type { Scheduler } from '../common/scheduler.js';
import { type FramePool, FrameReader } from '../protocol/framing.js';
import { ProtocolError } from '../protocol/protocol-error.js';
import { ANONYMOUS, type KafkaPrincipal, type SecurityProtocol } from '../security/principal.js';
import { checkRegion, readRegion, regionOf, sendRegion, zeroCopyAvailable } from '../storage/file-region.js';
import { readBuffers } from '../storage/read-buffers.js';
import { CloseConnectionError, type ConnectionInfo, type RequestHandler } from './request-handler.js';
import { readIntoSharedBuffer, socketFd } from './shared-read-buffer.js';

/**
 * What the listener knows of a connection before its first request: the listener, its security
 * protocol, who the peer is so far (an SSL client certificate's subject, else ANONYMOUS), and
 * whether the socket carries the bytes as they are (false for TLS: no shared read buffer, no
 * sendfile — TLS must see every byte it encrypts).
 */
export interface ConnectionSecurity {
  readonly listenerName: string;
  readonly securityProtocol: SecurityProtocol;
  readonly principal: KafkaPrincipal;
  readonly plainSocket: boolean;
}

export const PLAINTEXT_CONNECTION: ConnectionSecurity = Object.freeze({
  listenerName: 'PLAINTEXT',
  securityProtocol: 'PLAINTEXT',
  principal: ANONYMOUS,
  plainSocket: true,
});

export interface ServerConnectionLimits {
  /** socket.request.max.bytes */
  readonly maxFrameBytes: number;
  /**
   * A SASL listener's sasl.server.max.receive.size: the largest request until the connection has
   * authenticated (liftFrameLimit), so an unauthenticated peer cannot make the broker buffer a
   * socket.request.max.bytes request.
   */
  readonly maxFrameBytesUntilAuthenticated?: number;
  /**
   * Frames read but not yet handled: reading stops (socket paused) at this many. Also the most
   * requests started and not yet answered (released ones waiting) at once.
   */
  readonly maxQueuedRequests: number;
  /**
   * Bytes of frames read and not yet done with (queued, or held by a request being handled or
   * waiting): reading stops at this many, and no further request starts beyond it (one always can).
   */
  readonly maxQueuedBytes: number;
}

/**
 * One accepted socket (Kafka's KafkaChannel + the Processor's per-channel part). Frames are
 * handled one at a time in arrival order: pipelined frames wait in a bounded queue, and the socket
 * stops being read while that queue is full or while the client is not reading its responses (the
 * socket's write buffer is over its high-water mark). A request that released the connection (it
 * only waits now, see RequestHandler) lets the next one start; up to `maxQueuedRequests` such
 * requests wait at once, and responses leave in request order. Owned by the SocketServer, which
 * closes it on shutdown or idle expiry.
 */
export class ServerConnection implements ConnectionInfo {
  readonly remoteAddress: string;
  clientId: string | null = null;
  readonly listenerName: string;
  readonly securityProtocol: SecurityProtocol;
  principal: KafkaPrincipal;
  private readonly reader: FrameReader;
  private readonly queue: Buffer[] = [];
  private queuedBytes = 0;
  /** A request is being handled and has not released the connection. */
  private processing = false;
  /** Requests started and not yet answered, oldest first: responses are written in this order. */
  private readonly inFlight: InFlight[] = [];
  /** Bytes of the frames of started requests not yet settled (a handler may read its frame). */
  private heldBytes = 0;
  private waitingForDrain = false;
  private paused = false;
  /** Throttled (a client quota was violated): nothing is read or started until the timer ends it. */
  private muted = false;
  private mutedUntilMs = 0;
  private cancelUnmute: (() => void) | null = null;
  private closedFlag = false;
  /** A last answer is on its way; nothing more is read or started (closeAfterWrites). */
  private closing = false;
  private lastActiveMs: number;
  private readonly closeListeners = new Set<() => void>();
  /** The socket's descriptor where responses may carry file regions (sendfile), else -1. */
  private readonly socketFd: number;

  constructor(
    readonly id: string,
    private readonly socket: Socket,
    private readonly handler: RequestHandler,
    private readonly limits: ServerConnectionLimits,
    private readonly clock: Clock,
    private readonly scheduler: Scheduler,
    private readonly logger: Logger,
    private readonly onClose: (conn: ServerConnection) => void,
    // Frames spanning socket reads are assembled here and given back once handled: a handler must
    // not keep views of its request frame once its promise settles (it copies what it keeps).
    private readonly framePool?: FramePool,
    security: ConnectionSecurity = PLAINTEXT_CONNECTION,
  ) {
    this.listenerName = security.listenerName;
    this.securityProtocol = security.securityProtocol;
    this.principal = security.principal;
    this.remoteAddress = `${socket.remoteAddress ?? '?'}:${socket.remotePort ?? '?'}`;
    // Reads into one shared buffer where Node allows it (then every frame is copied out of it),
    // else Node's 64 KiB chunks as 'data' events (frames inside one chunk are views of it).
    const shared = security.plainSocket && readIntoSharedBuffer(socket, (chunk) => this.onData(chunk));
    this.reader = new FrameReader({
      maxFrameBytes: limits.maxFrameBytes,
      pool: framePool,
      copyFrames: shared,
      reserve: 'received',
    });
    if (limits.maxFrameBytesUntilAuthenticated !== undefined) {
      this.reader.setMaxFrameBytes(limits.maxFrameBytesUntilAuthenticated, 'sasl.server.max.receive.size');
    }
    this.lastActiveMs = clock.nowMs();
    this.socketFd = security.plainSocket && zeroCopyAvailable() ? socketFd(socket) : -1;
    socket.setNoDelay(true);
    if (!shared) socket.on('data', (chunk: Buffer) => this.onData(chunk));
    socket.on('drain', () => {
      this.waitingForDrain = false;
      this.lastActiveMs = this.clock.nowMs();
      this.updateReading();
      this.pump();
    });
    // A reset or a half-close from the client ends the connection; nothing to answer any more.
    socket.on('error', () => this.close(null));
    socket.on('end', () => this.close(null));
    socket.on('close', () => this.close(null));
  }

  /** Authenticated: requests up to socket.request.max.bytes from now on. */
  liftFrameLimit(): void {
    this.reader.setMaxFrameBytes(this.limits.maxFrameBytes, 'socket.request.max.bytes');
  }

  get sendsFileRegions(): boolean {
    return this.socketFd >= 0;
  }

  get closed(): boolean {
    return this.closedFlag;
  }

  get queuedRequests(): number {
    return this.queue.length;
  }

  whenClosed(listener: () => void): () => void {
    if (this.closedFlag) {
      listener();
      return () => {};
    }
    this.closeListeners.add(listener);
    return () => this.closeListeners.delete(listener);
  }

  /**
   * Idle: no bytes either way for `idleMs`, and nothing in flight or queued — or what is waits on
   * the client, which has not read its responses all that time (Kafka's idle expiry looks at the
   * channel's activity only): a client that never reads would otherwise hold its connection, its
   * queued requests and their answers for good.
   */
  isIdle(nowMs: number, idleMs: number): boolean {
    if (nowMs - this.lastActiveMs <= idleMs) return false;
    return this.waitingForDrain || (this.inFlight.length === 0 && this.queue.length === 0);
  }

  private onData(chunk: Buffer): void {
    if (this.closedFlag || this.closing) return;
    this.lastActiveMs = this.clock.nowMs();
    let frames: Buffer[];
    try {
      frames = this.reader.push(chunk);
    } catch (e) {
      this.close(e instanceof Error ? e.message : String(e));
      return;
    }
    for (const f of frames) {
      this.queue.push(f);
      this.queuedBytes += f.length;
    }
    this.updateReading();
    this.pump();
  }

  /**
   * Mutes the connection for `ms` (Kafka's ThrottledChannel, KIP-219): responses of requests
   * already taken are still written when due, but no further request is read or started until the
   * throttle ends. A longer throttle extends a running one; a shorter one changes nothing.
   */
  throttle(ms: number): void {
    if (this.closedFlag || !(ms > 0)) return;
    const untilMs = this.clock.nowMs() + ms;
    if (this.muted && untilMs <= this.mutedUntilMs) return;
    this.muted = true;
    this.mutedUntilMs = untilMs;
    this.cancelUnmute?.();
    this.cancelUnmute = this.scheduler.schedule(`unmute ${this.id}`, ms, () => {
      this.cancelUnmute = null;
      this.muted = false;
      this.updateReading();
      this.pump();
    });
    this.updateReading();
  }

  /** Muted by a client quota now. */
  get throttled(): boolean {
    return this.muted;
  }

  // Reading stops when the queue is full, responses are not being read or the connection is
  // throttled; resumes when none of these holds.
  private updateReading(): void {
    if (this.closedFlag) return;
    const stop =
      this.muted ||
      this.queue.length >= this.limits.maxQueuedRequests ||
      this.queuedBytes + this.heldBytes >= this.limits.maxQueuedBytes ||
      this.waitingForDrain;
    if (stop && !this.paused) {
      this.paused = true;
      this.socket.pause();
    } else if (!stop && this.paused) {
      this.paused = false;
      this.socket.resume();
    }
  }

  private pump(): void {
    if (this.processing || this.waitingForDrain || this.muted || this.closedFlag || this.closing) return;
    if (this.inFlight.length >= this.limits.maxQueuedRequests) return;
    const next = this.queue[0];
    if (next === undefined) return;
    // Requests that released the connection still hold their frames: together they stay within
    // the queued bytes bound (one request always runs).
    if (this.heldBytes > 0 && this.heldBytes + next.length > this.limits.maxQueuedBytes) return;
    const frame = this.queue.shift()!;
    this.queuedBytes -= frame.length;
    this.heldBytes += frame.length;
    this.processing = true;
    this.updateReading();
    const request: InFlight = { settled: false, response: null };
    this.inFlight.push(request);
    // Called by the handler (the next request starts once the handler's synchronous part is done)
    // or when the request settles.
    const release = (): void => {
      if (request.released) return;
      request.released = true;
      this.processing = false;
      queueMicrotask(() => this.pump());
    };
    this.handler.handle(frame, this, release).then(
      (response) => {
        this.framePool?.release(frame);
        this.heldBytes -= frame.length;
        request.settled = true;
        request.response = response;
        release();
        if (this.closedFlag) return;
        this.writeSettled();
        this.updateReading();
        this.pump();
      },
      (e: unknown) => {
        this.framePool?.release(frame);
        this.heldBytes -= frame.length;
        release();
        if (e instanceof CloseConnectionError && e.finalResponse !== undefined && !this.closedFlag) {
          request.settled = true;
          request.response = e.finalResponse;
          this.writeSettled();
          this.closeAfterWrites(e.message);
          return;
        }
        this.close(this.reasonOf(e));
      },
    );
  }

  // Answers the settled requests at the head, in request order.
  private writeSettled(): void {
    while (this.inFlight.length > 0 && this.inFlight[0]!.settled) {
      const response = this.inFlight.shift()!.response;
      if (response !== null) this.write(response);
    }
  }

  private reasonOf(e: unknown): string {
    if (e instanceof CloseConnectionError || e instanceof ProtocolError) return e.message;
    // Anything else is a bug in a handler: close this connection only, and say so loudly.
    const detail = e instanceof Error ? (e.stack ?? e.message) : String(e);
    return `unexpected error while handling a request: ${detail}`;
  }

  private write(chunks: Buffer[]): void {
    this.lastActiveMs = this.clock.nowMs();
    if (this.socketFd >= 0 && chunks.some((c) => regionOf(c) !== undefined)) {
      try {
        this.writeWithRegions(chunks);
      } catch (e) {
        const code = (e as NodeJS.ErrnoException).code;
        // The client went away mid-response: nothing to report. Anything else: the stored bytes
        // could not be sent (a truncated or closed segment) and the response is cut: close.
        this.close(code === 'EPIPE' || code === 'ECONNRESET' ? null : (e as Error).message);
        return;
      }
    } else {
      this.socket.cork();
      for (const c of chunks) this.writeChunk(c);
      this.socket.uncork();
    }
    if (this.socket.writableNeedDrain) {
      this.waitingForDrain = true;
      this.updateReading();
    }
  }

  private writeChunk(c: Buffer): void {
    // Stored bytes read for this response go back to the read-buffer pool once the kernel has
    // them (not on error: a destroyed socket's pending write is not ours to reuse).
    if (readBuffers.owns(c)) this.socket.write(c, (e) => e || readBuffers.release(c));
    else this.socket.write(c);
  }

  /**
   * A response holding file regions (storage/file-region.ts), in order: runs of ordinary chunks go
   * out corked (one writev); a region goes with sendfile straight from the page cache while nothing
   * is queued on the socket (so its bytes follow everything before them), and what the socket does
   * not take at once is read into memory and queued like any chunk.
   */
  private writeWithRegions(chunks: Buffer[]): void {
    // A response that cannot be completed is not begun.
    for (const c of chunks) {
      const region = regionOf(c);
      if (region !== undefined) checkRegion(region);
    }
    let i = 0;
    while (i < chunks.length) {
      const region = regionOf(chunks[i]!);
      if (region === undefined) {
        this.socket.cork();
        for (; i < chunks.length && regionOf(chunks[i]!) === undefined; i++) this.writeChunk(chunks[i]!);
        this.socket.uncork();
        continue;
      }
      i++;
      const sent = this.nothingQueued() ? sendRegion(this.socketFd, region, 0) : 0;
      if (sent < region.length) {
        const rest = readBuffers.acquire(region.length - sent);
        readRegion(region, sent, rest);
        this.writeChunk(rest);
      }
    }
  }

  // Every byte written so far is in the kernel: none waits in the stream or in libuv's queue.
  private nothingQueued(): boolean {
    const handle = (this.socket as unknown as { _handle?: { writeQueueSize?: number } })._handle;
    return this.socket.writableLength === 0 && handle?.writeQueueSize === 0;
  }

  /**
   * Closes once what was written has left (a last answer the client must read), reading and
   * starting nothing meanwhile; the idle sweep ends it if the client never reads.
   */
  private closeAfterWrites(reason: string): void {
    this.closing = true;
    this.cancelUnmute?.();
    this.cancelUnmute = null;
    this.muted = true;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.updateReading();
    this.socket.end(() => this.close(reason));
  }

  /** Closes the socket; `reason` non-null logs the one line that names the client and why. */
  close(reason: string | null): void {
    if (this.closedFlag) return;
    this.closedFlag = true;
    this.cancelUnmute?.();
    this.cancelUnmute = null;
    this.queue.length = 0;
    this.queuedBytes = 0;
    this.inFlight.length = 0;
    if (reason !== null) {
      this.logger.warn(
        `closing connection ${this.id} from ${this.remoteAddress} (clientId ${JSON.stringify(this.clientId)}): ${reason}`,
      );
    }
    this.socket.destroy();
    this.onClose(this);
    for (const listener of [...this.closeListeners]) listener();
    this.closeListeners.clear();
  }
}

interface InFlight {
  settled: boolean;
  released?: boolean;
  response: Buffer[] | null;
}
