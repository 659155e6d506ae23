import { constants } from 'node:os';
import { getSystemErrorName } from 'node:util';
import { linuxNativeFunction } from '../common/native-addon.js';
import { ZERO_COPY_MIN_BYTES } from '../protocol/writer.js';
import type { FileHandle } from './fs.js';

/**
 * Stored bytes that a Fetch response names instead of holding: Kafka's zero-copy path. A read for
 * a socket returns a *placeholder* — a Buffer of the right length whose contents mean nothing —
 * registered here with the file, position and length it stands for. The response is encoded
 * around it as around any records (the encoder keeps arrays of ZERO_COPY_MIN_BYTES or more as
 * their own chunk, so the placeholder reaches the socket untouched), and the server connection
 * sends the file's bytes in its place with sendfile(2), or reads them then when the socket
 * cannot take them directly. Only the server connection may consume a placeholder: nothing else
 * may read one (its bytes are not the data).
 *
 * A region is checked when it is sent: its file must still be open and not truncated since the
 * read (the handle's generation), else the bytes it named are gone and the response cannot be
 * completed — the connection is closed, as Kafka closes one whose FileRecords were truncated
 * during a send.
 */
export interface FileRegion {
  readonly handle: FileHandle;
  readonly generation: number;
  readonly position: number;
  readonly length: number;
}

/** What a file handle tells the zero-copy path: its descriptor, and a count bumped by every truncation. */
export interface ZeroCopySource {
  readonly fd: number;
  readonly generation: number;
}

/** Thrown when a region's file was closed or truncated after the read that named it. */
export class StaleFileRegionError extends Error {
  override readonly name = 'StaleFileRegionError';
}

const { EAGAIN } = constants.errno;

type SendFile = (socketFd: number, fileFd: number, position: number, length: number) => number;

const nativeSendFile = (): SendFile | null => linuxNativeFunction<SendFile>('sendfile', 'SKIFF_ZERO_COPY');

let enabled = true;

/** Whether stored bytes can be sent with sendfile here (Linux, the addon built, SKIFF_ZERO_COPY not 0). */
export function zeroCopyAvailable(): boolean {
  return enabled && nativeSendFile() !== null;
}

/**
 * Turns the zero-copy path off (or back on) for connections accepted from now on: for tests and
 * same-process comparisons of both paths.
 */
export function setZeroCopyEnabled(on: boolean): void {
  enabled = on;
}

/** Bytes of regions sent with sendfile, and read into memory instead (the socket was busy). */
export const fileRegionStats = { sentBytes: 0, copiedBytes: 0 };

const regions = new WeakMap<Buffer, FileRegion>();
/** Backing memory of the placeholders: never written nor read, so its pages are never touched. */
let placeholders = Buffer.alloc(0);

/**
 * A placeholder for `length` bytes of `handle` at `position`, or null when this read should copy
 * instead (too short to stay a chunk of its own, a handle without a descriptor, no sendfile).
 */
export function fileRegion(handle: FileHandle, position: number, length: number): Buffer | null {
  if (length < ZERO_COPY_MIN_BYTES || !zeroCopyAvailable()) return null;
  const source = handle.zeroCopySource?.();
  if (!source) return null;
  if (placeholders.length < length) placeholders = Buffer.allocUnsafeSlow(2 ** Math.ceil(Math.log2(length)));
  const view = placeholders.subarray(0, length);
  regions.set(view, { handle, generation: source.generation, position, length });
  return view;
}

/** The region a placeholder stands for; undefined for ordinary buffers. */
export function regionOf(chunk: Buffer): FileRegion | undefined {
  return regions.get(chunk);
}

/** Throws StaleFileRegionError when the region's bytes are gone (its file truncated or closed). */
export function checkRegion(region: FileRegion): void {
  sourceOf(region);
}

function sourceOf(region: FileRegion): ZeroCopySource {
  const source = region.handle.zeroCopySource?.();
  if (!source || source.generation !== region.generation) {
    throw new StaleFileRegionError(
      `stored bytes at position ${region.position} (${region.length} bytes) were truncated or closed before they were sent`,
    );
  }
  return source;
}

/**
 * Sends region bytes from `offset` (relative to the region) on a non-blocking socket, as many as
 * it takes now; returns how many were sent (0 when the socket buffer is full).
 */
export function sendRegion(socketFd: number, region: FileRegion, offset: number): number {
  const send = nativeSendFile();
  if (!send) return 0;
  const { fd } = sourceOf(region);
  let sent = offset;
  while (sent < region.length) {
    const n = send(socketFd, fd, region.position + sent, region.length - sent);
    if (n === -EAGAIN) break;
    if (n < 0) throw sendFileError(-n);
    if (n === 0) throw new StaleFileRegionError(`stored bytes at position ${region.position} end early`);
    sent += n;
  }
  fileRegionStats.sentBytes += sent - offset;
  return sent - offset;
}

function sendFileError(errno: number): NodeJS.ErrnoException {
  const code = getSystemErrorName(-errno);
  const e: NodeJS.ErrnoException = new Error(`sendfile failed: ${code}`);
  e.errno = -errno;
  e.code = code;
  return e;
}

/** Reads region bytes from `offset` to its end into `into` (which has room for them). */
export function readRegion(region: FileRegion, offset: number, into: Buffer): void {
  sourceOf(region);
  const want = region.length - offset;
  const n = region.handle.read(into, 0, want, region.position + offset);
  if (n < want) throw new StaleFileRegionError(`stored bytes at position ${region.position} end early`);
  fileRegionStats.copiedBytes += want;
}
