/**
 * The import rules of src/ (ARCHITECTURE.md, "Layers"): which top-level directory may import
 * which. Imports flow one way — common ← protocol ← storage ← replication ← broker ← cli —
 * protocol and storage know no server, replication reaches the network only through an injected
 * transport, the controller knows neither storage nor replication, and nothing imports the CLI.
 * A pure check over file texts, so its own test can feed it a forbidden import.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

/** Each layer and the layers it may import (besides itself). */
export const LAYER_RULES: Readonly<Record<string, readonly string[]>> = {
  common: [],
  // Metrics plumbing over prom-client: the registry, scrape-time families, the exposition merge
  // and the HTTP endpoint. Knows no broker; the broker, the launcher and the CLI register into it.
  metrics: ['common'],
  protocol: ['common'],
  storage: ['common', 'protocol'],
  metadata: ['common', 'protocol'],
  controller: ['common', 'protocol', 'metadata'],
  // Who a connection is and what it may do: principals, authentication (SASL, TLS), ACLs.
  security: ['common', 'protocol', 'metadata'],
  network: ['common', 'protocol', 'storage', 'security'],
  replication: ['common', 'protocol', 'storage', 'metadata'],
  coordinator: ['common', 'protocol'],
  client: ['common', 'protocol', 'network', 'security'],
  broker: [
    'common',
    'protocol',
    'storage',
    'metadata',
    'replication',
    'coordinator',
    'network',
    'metrics',
    'security',
  ],
  cluster: [
    'common',
    'protocol',
    'storage',
    'metadata',
    'controller',
    'network',
    'broker',
    'metrics',
    'security',
  ],
  cli: [
    'common',
    'protocol',
    'storage',
    'metadata',
    'controller',
    'network',
    'replication',
    'coordinator',
    'client',
    'broker',
    'cluster',
    'dashboard',
    'metrics',
    'security',
  ],
  // The live dashboard: polls the cluster through the client, served by the launcher's HTTP port.
  dashboard: ['common', 'protocol', 'client'],
  // The package's programmatic API (startCluster): a launcher process and a client for createTopic.
  api: ['common', 'protocol', 'metadata', 'network', 'client', 'cluster', 'dashboard', 'security'],
};

export interface ImportViolation {
  /** The importing file, relative to the source root (`storage/log.ts`). */
  readonly file: string;
  /** The import as written. */
  readonly specifier: string;
  readonly fromLayer: string;
  readonly toLayer: string;
}

const IMPORT =
  /(?:^|\n)\s*(?:import|export)\s[^'"]*?from\s+['"]([^'"]+)['"]|(?:^|\n)\s*import\s+['"]([^'"]+)['"]/g;

/** The relative specifiers a TypeScript source imports or re-exports (packages and node: are left out). */
export function importsOf(source: string): string[] {
  const out: string[] = [];
  for (const m of source.matchAll(IMPORT)) {
    const spec = m[1] ?? m[2]!;
    if (spec.startsWith('.')) out.push(spec);
  }
  return out;
}

/**
 * Every import that crosses into a layer its file's layer may not use. `files`: path relative to
 * the source root → source text. A file directly under the root, or a layer missing from the
 * table, is a violation too (a new directory must be placed in the table).
 */
export function importViolations(files: ReadonlyMap<string, string>): ImportViolation[] {
  const out: ImportViolation[] = [];
  for (const [file, source] of files) {
    const fromLayer = file.split('/')[0]!;
    const allowed = LAYER_RULES[fromLayer];
    for (const specifier of importsOf(source)) {
      const target = path.posix.normalize(path.posix.join(path.posix.dirname(file), specifier));
      const toLayer = target.split('/')[0]!;
      if (toLayer === fromLayer) continue;
      if (allowed === undefined || target.startsWith('..') || !allowed.includes(toLayer)) {
        out.push({ file, specifier, fromLayer, toLayer });
      }
    }
  }
  return out;
}

/** Every .ts file under `root`, by path relative to it. */
export function readSources(root: string): Map<string, string> {
  const files = new Map<string, string>();
  const walk = (dir: string): void => {
    for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
      const full = path.join(dir, e.name);
      if (e.isDirectory()) walk(full);
      else if (e.name.endsWith('.ts')) {
        files.set(path.relative(root, full).split(path.sep).join('/'), fs.readFileSync(full, 'utf8'));
      }
    }
  };
  walk(root);
  return files;
}
