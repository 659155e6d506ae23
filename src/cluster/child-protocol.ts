/**
 * What a `skiff up` broker child and its launcher say to each other on the IPC channel, next to
 * the metadata store's own messages (tagged `skiffStore`; these are tagged `skiffLauncher`).
 */

/** The environment variable carrying the child's server properties as a JSON object. */
export const PROPS_ENV = 'SKIFF_BROKER_PROPS';

export type ChildMessage =
  | { readonly skiffLauncher: 'ready'; readonly host: string; readonly port: number }
  | { readonly skiffLauncher: 'failed'; readonly message: string };

export function isChildMessage(m: unknown): m is ChildMessage {
  return (
    typeof m === 'object' &&
    m !== null &&
    ((m as { skiffLauncher?: unknown }).skiffLauncher === 'ready' ||
      (m as { skiffLauncher?: unknown }).skiffLauncher === 'failed')
  );
}
