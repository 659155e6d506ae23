/** What a server connection needs from the broker: one call per request frame, in order. */

import type { KafkaPrincipal, SecurityProtocol } from '../security/principal.js';

/** Who sent a request: for log lines, per-client decisions and authorization. */
export interface ConnectionInfo {
  /** Unique per server, e.g. `127.0.0.1:9092-127.0.0.1:50412-7`, as Kafka names its channels. */
  readonly id: string;
  readonly remoteAddress: string;
  /** The clientId of the last request read on this connection, once one was decoded. */
  clientId: string | null;
  /** The listener the connection came in on (`PLAINTEXT`, `INTERNAL`, ...), as Kafka's listener name. */
  readonly listenerName: string;
  readonly securityProtocol: SecurityProtocol;
  /**
   * Who the connection is: User:ANONYMOUS until authentication says otherwise (a SASL exchange
   * sets it once it succeeds; an SSL client certificate gives it at the handshake).
   */
  principal: KafkaPrincipal;
  /**
   * Runs `listener` once when the connection closes (at once if it is closed), so a parked request
   * stops waiting for a client that is gone. Returns a function that removes the listener.
   */
  whenClosed(listener: () => void): () => void;
  /**
   * The connection writes file-region placeholders in responses as the stored bytes they stand
   * for (storage/file-region.ts); absent or false: responses must hold their bytes.
   */
  readonly sendsFileRegions?: boolean;
  /** The connection authenticated: its requests may be as large as socket.request.max.bytes again. */
  liftFrameLimit?(): void;
  /**
   * Mutes the connection for `ms` from now (Kafka's throttled channel, KIP-219): responses are
   * still written as they are due, but no further request is read or started until then. Absent
   * on connections that cannot be muted (a simulated one).
   */
  throttle?(ms: number): void;
}

/**
 * Thrown by a handler when the connection must be closed instead of answered (an unknown API key,
 * a version Kafka does not answer, a malformed body, acks=0 with an error). The server writes one
 * log line with the reason and closes only this connection.
 */
export class CloseConnectionError extends Error {
  override readonly name = 'CloseConnectionError';
  constructor(
    message: string,
    /** Written (after the responses before it) before the connection closes: a failed SASL exchange's answer. */
    readonly finalResponse?: Buffer[],
  ) {
    super(message);
  }
}

export interface RequestHandler {
  /**
   * Handles one request frame (size prefix removed). Resolves to the response as chunks ready to
   * write (size prefix included), or null when the request gets no response (Produce with acks=0).
   * The server calls this in arrival order per connection and, as Kafka mutes a channel while its
   * request is processed, starts the next request only when this one settles — or earlier, once
   * the handler calls `release`: the request has done everything that must happen before the
   * next one starts and now only waits (an acks=all Produce, appended, waiting for its followers).
   * Responses are written in request order either way.
   */
  handle(frame: Buffer, connection: ConnectionInfo, release: () => void): Promise<Buffer[] | null>;
}
