import { createRequire } from 'node:module';

/** build/Release of the repository root: three levels above dist/src/common. */
const ADDON = '../../../build/Release/skiff_native.node';

let loaded: Record<string, unknown> | null | undefined;

/**
 * Skiff's one N-API addon (native/*.c: CRC-32C, malloc tuning), built by `npm ci` through
 * node-gyp, loaded once; null when it was not built (its users then fall back or do without).
 */
export function nativeAddon(): Record<string, unknown> | null {
  if (loaded === undefined) {
    try {
      loaded = createRequire(import.meta.url)(ADDON) as Record<string, unknown>;
    } catch {
      loaded = null;
    }
  }
  return loaded;
}
