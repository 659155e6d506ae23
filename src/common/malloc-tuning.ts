import { nativeAddon } from './native-addon.js';

/**
 * Keeps freed malloc memory in a broker process's heap instead of handing it back to the kernel
 * after every burst, and backs the heap it grows up front with transparent huge pages (native/
 * memory.c explains the numbers): produce data arrives in fresh 64 KiB socket buffers, and
 * faulting (and re-faulting) their 4 KiB pages cost a broker about twice the CPU per produce in
 * the bench. Called once by the broker process entry points (`skiff broker`, `skiff up`'s
 * brokers), never by tests' in-process brokers. Returns whether it applied: false without the
 * native addon (npm ci could not build it), off glibc, or with SKIFF_MALLOC_DEFAULTS=1.
 */
export function tuneMallocForBroker(): boolean {
  if (process.env.SKIFF_MALLOC_DEFAULTS === '1') return false;
  const tune = nativeAddon()?.tuneMalloc;
  return typeof tune === 'function' && tune() === true;
}
