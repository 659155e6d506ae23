import type { Socket } from 'node:net';

/**
 * Reads of accepted sockets into one process-wide buffer, as a client socket's `onread` option
 * does. Node takes `onread` for sockets it creates for a client, not for those a server accepts, so
 * this sets the same two per-socket fields `onread` sets (Node's `kBuffer`/`kBufferCb` symbols) and
 * switches the handle to the user buffer, before the first read. A 1 MB produce then arrives in one
 * or a few reads instead of ~16 reads of fresh 64 KiB buffers through the stream machinery: the
 * broker's CPU for a kcat produce of 100 MB fell to about half. Node's pause()/resume() and 'end'
 * work as with `onread`. One buffer serves every connection: each read's callback runs before the
 * next read of any socket, and must copy out what it keeps (FrameReader's copyFrames).
 * Returns false, changing nothing, when this Node does not have those fields (then 'data' events).
 */
export function readIntoSharedBuffer(socket: Socket, onChunk: (chunk: Buffer) => void): boolean {
  const symbols = Object.getOwnPropertySymbols(socket);
  const kBuffer = symbols.find((s) => s.description === 'kBuffer');
  const kBufferCb = symbols.find((s) => s.description === 'kBufferCb');
  const handle = (socket as unknown as { _handle?: { useUserBuffer?: (b: Uint8Array) => void } })._handle;
  if (kBuffer === undefined || kBufferCb === undefined || typeof handle?.useUserBuffer !== 'function') {
    return false;
  }
  const fields = socket as unknown as Record<symbol, unknown>;
  // Only a socket in the state Node's constructor leaves it without `onread`.
  if (fields[kBuffer] !== null || fields[kBufferCb] !== null) return false;
  sharedBuffer ??= Buffer.allocUnsafe(SHARED_BUFFER_BYTES);
  fields[kBuffer] = sharedBuffer;
  fields[kBufferCb] = (nread: number, buf: Buffer) => {
    onChunk(buf.subarray(0, nread));
  };
  handle.useUserBuffer(sharedBuffer);
  return true;
}

const SHARED_BUFFER_BYTES = 1024 * 1024;
let sharedBuffer: Buffer | undefined;

/**
 * The descriptor of a connected TCP socket (Node's handle has it on Unix), or -1: for the system
 * calls Node does not offer (sendfile, SO_RCVLOWAT).
 */
export function socketFd(socket: Socket): number {
  const fd = (socket as unknown as { _handle?: { fd?: unknown } })._handle?.fd;
  return typeof fd === 'number' && fd >= 0 ? fd : -1;
}
