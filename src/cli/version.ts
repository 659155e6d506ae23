import { readFileSync } from 'node:fs';

/**
 * Skiff's version, from the package.json of the installation running (three directories up from
 * the compiled dist/src/cli/version.js). What `skiff --version` prints, as Kafka's tools print
 * AppInfoParser.getVersion(); "unknown" (Kafka's default too) when the file cannot be read.
 */
export function skiffVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(new URL('../../../package.json', import.meta.url), 'utf8'));
    return typeof pkg.version === 'string' ? pkg.version : 'unknown';
  } catch {
    return 'unknown';
  }
}
