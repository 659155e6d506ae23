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

const linuxFunctions = new Map<string, unknown>();

/**
 * A function of the addon that only Linux has (sendfile, SO_RCVLOWAT), or null: on other systems,
 * without the addon, or when the environment variable `offSwitch` is "0" (read once).
 */
export function linuxNativeFunction<T>(name: string, offSwitch: string): T | null {
  if (!linuxFunctions.has(name)) {
    const fn = process.platform === 'linux' && process.env[offSwitch] !== '0' ? nativeAddon()?.[name] : null;
    linuxFunctions.set(name, typeof fn === 'function' ? fn : null);
  }
  return linuxFunctions.get(name) as T | null;
}
