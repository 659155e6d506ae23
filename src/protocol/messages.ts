/**
 * Requests and responses as whole frames: header + body, for both sides of a connection (the broker
 * writes responses; replica fetchers and tools write requests and read responses). The header
 * version follows from the codec's flexible versions, so a client loads only the codecs of the APIs
 * it sends; reading a request whose API is not yet known is request-frame.ts, which needs them all.
 */
import type { MessageCodec } from './codec-runtime.js';
import { frame } from './framing.js';
import { type RequestHeader, RequestHeaderCodec } from './generated/RequestHeader.js';
import { ResponseHeaderCodec } from './generated/ResponseHeader.js';
import { ProtocolError } from './protocol-error.js';
import { Reader } from './reader.js';
import { Writer } from './writer.js';

export type { RequestHeader } from './generated/RequestHeader.js';

/**
 * Request header version for a version of `request` (that API's request codec): 2 when flexible,
 * else 1 (ControlledShutdown v0 uses 0). The same rule as generated/index.ts' requestHeaderVersion.
 */
function requestHeaderVersionOf(request: MessageCodec<unknown>, apiVersion: number): number {
  const flexMin = request.flexibleMinVersion;
  if (flexMin >= 0 && apiVersion >= flexMin) return 2;
  return request.apiKey === 7 && apiVersion === 0 ? 0 : 1;
}

/** Response header version: 1 when flexible, else 0; ApiVersions responses always use 0. */
function responseHeaderVersionOf(
  apiKey: number,
  response: MessageCodec<unknown>,
  apiVersion: number,
): number {
  if (apiKey === 18) return 0;
  const flexMin = response.flexibleMinVersion;
  return flexMin >= 0 && apiVersion >= flexMin ? 1 : 0;
}

/** A request as chunks ready for a socket write, size prefix included. */
export function encodeRequest<T>(header: RequestHeader, codec: MessageCodec<T>, body: T): Buffer[] {
  const w = new Writer();
  RequestHeaderCodec.encode(w, header, requestHeaderVersionOf(codec, header.requestApiVersion));
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
  ResponseHeaderCodec.encode(w, { correlationId }, responseHeaderVersionOf(apiKey, codec, apiVersion));
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
  const { correlationId } = ResponseHeaderCodec.decode(r, responseHeaderVersionOf(apiKey, codec, apiVersion));
  const body = codec.decode(r, apiVersion);
  if (r.remaining !== 0) throw new ProtocolError(`${r.remaining} bytes after a ${codec.name} body`);
  return { correlationId, body };
}
