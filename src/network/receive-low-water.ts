import type { Socket } from 'node:net';
import { linuxNativeFunction } from '../common/native-addon.js';
import { socketFd } from './shared-read-buffer.js';

type SetLowWater = (socketFd: number, bytes: number) => number;

const nativeSet = (): SetLowWater | null =>
  linuxNativeFunction<SetLowWater>('setReceiveLowWater', 'SKIFF_RECEIVE_LOW_WATER');

/** Frames at least this large are waited for in one piece (smaller ones wake the reader as they come). */
const MIN_WAIT_BYTES = 64 * 1024;

/**
 * SO_RCVLOWAT for a socket that reads large response frames (a follower's replica fetches): while
 * a frame of MIN_WAIT_BYTES or more is still arriving, the event loop is told the socket is
 * readable only once the rest of it (up to `maxBytes`, the read buffer) is there, instead of for
 * every piece loopback delivers. The rest of a frame always comes (or the connection ends, which
 * wakes the reader too), so the wait cannot hang. Linux caps the mark at half of tcp_rmem's
 * maximum and grows a smaller receive buffer to hold it (clamping the window to the mark until the
 * buffer's autotuning grows it again, which moves the clamp along). Inert where the native addon
 * is missing.
 */
export class ReceiveLowWater {
  private current = 1;

  private constructor(
    private readonly fd: number,
    private readonly set: SetLowWater,
    private readonly maxBytes: number,
  ) {}

  /** For a connected socket, or null where the option cannot be set. */
  static of(socket: Socket, maxBytes: number): ReceiveLowWater | null {
    const set = nativeSet();
    const fd = socketFd(socket);
    if (set === null || fd < 0) return null;
    return new ReceiveLowWater(fd, set, maxBytes);
  }

  /** After each read: wait for `missingBytes` of the frame being collected, or for any byte. */
  update(missingBytes: number): void {
    const want = missingBytes >= MIN_WAIT_BYTES ? Math.min(missingBytes, this.maxBytes) : 1;
    if (want === this.current) return;
    // A failure leaves the previous setting; both are safe (only the wakeups differ).
    if (this.set(this.fd, want) === 0) this.current = want;
  }
}
