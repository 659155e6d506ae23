/**
 * Requests and responses as whole frames: header + body, for both sides of a connection (the broker
 * reads requests and writes responses; replica fetchers and tools do the reverse).
 * The header version follows from the API key and version (see generated/index.ts).
 */
import type { MessageCodec } from './codec-runtime.js';
import { frame } from './framing.js';
import { requestHeaderVersion, responseHeaderVersion } from './generated/index.js';
import { type RequestHeader, RequestHeaderCodec } from './generated/RequestHeader.js';
import { ResponseHeaderCodec } from './generated/ResponseHeader.js';
import { ProtocolError } from './protocol-error.js';
import { Reader } from './reader.js';
import { Writer } from './writer.js';

export type { RequestHeader } from './generated/RequestHeader.js';

export interface IncomingRequest {
  header: RequestHeader;
  headerVersion: number;
  /** Positioned at the first byte of the body. */
  body: Reader;
}

/**
 * Reads the request header of one frame (without its size prefix). The API key and version are
 * peeked first because they decide the header's own version; the body is left undecoded so the
 * caller can answer UNSUPPORTED_VERSION for versions it does not implement.
 */
export function readRequest(frameBytes: Buffer): IncomingRequest {
  if (frameBytes.length < 8)
    throw new ProtocolError(`request frame of ${frameBytes.length} bytes is too short`);
  const apiKey = frameBytes.readInt16BE(0);
  const apiVersion = frameBytes.readInt16BE(2);
  const headerVersion = requestHeaderVersion(apiKey, apiVersion);
  const r = new Reader(frameBytes);
  const header = RequestHeaderCodec.decode(r, headerVersion);
  return { header, headerVersion, body: r };
}

/** A request as chunks ready for a socket write, size prefix included. */
export function encodeRequest<T>(header: RequestHeader, codec: MessageCodec<T>, body: T): Buffer[] {
  const w = new Writer();
  RequestHeaderCodec.encode(w, header, requestHeaderVersion(header.requestApiKey, header.requestApiVersion));
  codec.encode(w, body, header.requestApiVersion);
  return frame(w.chunksView());
}

/** A response as chunks ready for a socket write, size prefix included. */
export function encodeResponse<T>(
  correlationId: number,
  apiKey: number,
  apiVersion: number,
  codec: MessageCodec<T>,
  body: T,
): Buffer[] {
  const w = new Writer();
  ResponseHeaderCodec.encode(w, { correlationId }, responseHeaderVersion(apiKey, apiVersion));
  codec.encode(w, body, apiVersion);
  return frame(w.chunksView());
}

/** Decodes a response frame (without its size prefix) to a request the caller sent. */
export function readResponse<T>(
  frameBytes: Buffer,
  apiKey: number,
  apiVersion: number,
  codec: MessageCodec<T>,
): { correlationId: number; body: T } {
  const r = new Reader(frameBytes);
  const { correlationId } = ResponseHeaderCodec.decode(r, responseHeaderVersion(apiKey, apiVersion));
  const body = codec.decode(r, apiVersion);
  if (r.remaining !== 0) throw new ProtocolError(`${r.remaining} bytes after a ${codec.name} body`);
  return { correlationId, body };
}
