import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { emitIndex, emitMessage, SKIFF_GENERATED_HEADER } from './emit.js';
import { loadSpecs } from './spec.js';

/**
 * Regenerates src/protocol/generated from Kafka's message specs.
 *   node dist/tools/codegen/main.js [--check] [--specs DIR]
 * --check writes nothing and exits 1 when a committed file differs from what would be generated.
 */
export const REPO_ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../../..');
export const DEFAULT_SPEC_DIR = resolve(REPO_ROOT, '../shared/kafka-protocol/message');
/** Record schemas of __consumer_offsets and the other coordinator topics, generated into coordinator/. */
export const COORDINATOR_DIR_NAME = 'coordinator';
/**
 * Skiff's own APIs (api keys from 10000), in Kafka's spec format: generated next to Kafka's, listed
 * in the same index so the router and ApiVersions see them like any other API.
 */
export const SKIFF_SPEC_DIR = join(REPO_ROOT, 'tools/codegen/skiff-specs');
export const GENERATED_DIR = join(REPO_ROOT, 'src/protocol/generated');
/** The lowest api key a Skiff spec may use: far above Kafka's own keys. */
export const SKIFF_MIN_API_KEY = 10000;
/** Files in GENERATED_DIR that other generators own. */
const FOREIGN_FILES = new Set(['errors.ts']);

/**
 * Every generated file by its path under GENERATED_DIR. `specDir` is the message directory; the
 * coordinator record schemas are read from its sibling `coordinator` directory, Skiff's own APIs
 * from `skiffSpecDir`.
 */
export function generateAll(specDir: string, skiffSpecDir: string = SKIFF_SPEC_DIR): Map<string, string> {
  const kafka = loadSpecs(specDir);
  const skiff = loadSpecs(skiffSpecDir);
  const kafkaKeys = new Set(kafka.map((s) => s.apiKey).filter((k) => k !== undefined));
  const files = new Map<string, string>();
  for (const spec of kafka) files.set(`${spec.name}.ts`, emitMessage(spec));
  for (const spec of skiff) {
    if (spec.apiKey !== undefined && (spec.apiKey < SKIFF_MIN_API_KEY || kafkaKeys.has(spec.apiKey))) {
      throw new Error(`${spec.name}: Skiff api keys start at ${SKIFF_MIN_API_KEY} (got ${spec.apiKey})`);
    }
    if (files.has(`${spec.name}.ts`)) throw new Error(`${spec.name}: a Kafka spec has that name`);
    files.set(`${spec.name}.ts`, emitMessage(spec, '../codec-runtime.js', SKIFF_GENERATED_HEADER));
  }
  files.set('index.ts', emitIndex([...kafka, ...skiff]));
  for (const spec of loadSpecs(join(specDir, '..', COORDINATOR_DIR_NAME))) {
    files.set(`${COORDINATOR_DIR_NAME}/${spec.name}.ts`, emitMessage(spec, '../../codec-runtime.js'));
  }
  return files;
}

function listFiles(dir: string, prefix = ''): string[] {
  const out: string[] = [];
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const rel = `${prefix}${entry.name}`;
    if (entry.isDirectory()) out.push(...listFiles(join(dir, entry.name), `${rel}/`));
    else out.push(rel);
  }
  return out;
}

/** Names of files that differ between the generator's output and the directory. */
export function staleFiles(files: Map<string, string>, dir: string): string[] {
  const stale: string[] = [];
  for (const [name, text] of files) {
    const path = join(dir, name);
    if (!existsSync(path) || readFileSync(path, 'utf8') !== text) stale.push(name);
  }
  if (existsSync(dir)) {
    for (const name of listFiles(dir)) {
      if (!files.has(name) && !FOREIGN_FILES.has(name)) stale.push(`${name} (not generated)`);
    }
  }
  return stale.sort();
}

function main(argv: string[]): number {
  const check = argv.includes('--check');
  const at = argv.indexOf('--specs');
  const specDir = at >= 0 && argv[at + 1] ? resolve(argv[at + 1] as string) : DEFAULT_SPEC_DIR;
  const files = generateAll(specDir);
  const stale = staleFiles(files, GENERATED_DIR);
  if (check) {
    for (const s of stale) process.stderr.write(`stale: src/protocol/generated/${s}\n`);
    return stale.length === 0 ? 0 : 1;
  }
  mkdirSync(join(GENERATED_DIR, COORDINATOR_DIR_NAME), { recursive: true });
  for (const name of listFiles(GENERATED_DIR)) {
    if (!files.has(name) && !FOREIGN_FILES.has(name)) rmSync(join(GENERATED_DIR, name));
  }
  for (const [name, text] of files) writeFileSync(join(GENERATED_DIR, name), text);
  process.stdout.write(`generated ${files.size} files in src/protocol/generated (${stale.length} changed)\n`);
  return 0;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main(process.argv.slice(2));
}
