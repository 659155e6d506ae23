/**
 * The broker's side of messages.ts: reading a request frame before its API is known. The header's
 * version depends on the API key and version, so this needs the registry of every API
 * (generated/index.ts, all the codecs); a client, which knows what it sent, does not load it.
 */
import { requestHeaderVersion } from './generated/index.js';
import { type RequestHeader, RequestHeaderCodec } from './generated/RequestHeader.js';
import { ProtocolError } from './protocol-error.js';
import { Reader } from './reader.js';

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
