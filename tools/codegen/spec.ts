import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';

/**
 * Kafka's JSON message specs, as read from ../shared/kafka-protocol/message. The files are JSON with
 * `//` line comments. Only the keys the generator acts on are typed; the rest (about, entityType,
 * mapKey, zeroCopy, listeners) are documentation for us.
 */
export interface FieldSpec {
  name: string;
  type: string;
  versions: string;
  nullableVersions?: string;
  taggedVersions?: string;
  flexibleVersions?: string;
  tag?: number;
  default?: string | number | boolean;
  ignorable?: boolean;
  about?: string;
  fields?: FieldSpec[];
}

export interface StructSpec {
  name: string;
  versions: string;
  fields: FieldSpec[];
}

export interface MessageSpec {
  apiKey?: number;
  type: 'request' | 'response' | 'header' | 'data';
  name: string;
  validVersions: string;
  flexibleVersions: string;
  fields: FieldSpec[];
  commonStructs?: StructSpec[];
  latestVersionUnstable?: boolean;
}

/** An inclusive version range; `max` is Infinity for "N+", and min > max means "none". */
export interface VersionRange {
  min: number;
  max: number;
}

export const NO_VERSIONS: VersionRange = { min: 1, max: 0 };

export function parseVersions(text: string): VersionRange {
  const s = text.trim();
  if (s === 'none') return NO_VERSIONS;
  let m = /^(\d+)\+$/.exec(s);
  if (m) return { min: Number(m[1]), max: Number.POSITIVE_INFINITY };
  m = /^(\d+)-(\d+)$/.exec(s);
  if (m) {
    const r = { min: Number(m[1]), max: Number(m[2]) };
    if (r.min > r.max) throw new Error(`empty version range '${text}'`);
    return r;
  }
  m = /^(\d+)$/.exec(s);
  if (m) return { min: Number(m[1]), max: Number(m[1]) };
  throw new Error(`bad version range '${text}'`);
}

export function isEmpty(r: VersionRange): boolean {
  return r.min > r.max;
}

export function intersect(a: VersionRange, b: VersionRange): VersionRange {
  const r = { min: Math.max(a.min, b.min), max: Math.min(a.max, b.max) };
  return isEmpty(r) ? NO_VERSIONS : r;
}

export function contains(r: VersionRange, version: number): boolean {
  return version >= r.min && version <= r.max;
}

/** Removes `//` comments that are not inside a JSON string. */
export function stripJsonComments(text: string): string {
  let out = '';
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      out += c;
      if (c === '\\') {
        out += text[i + 1] ?? '';
        i++;
      } else if (c === '"') inString = false;
    } else if (c === '"') {
      inString = true;
      out += c;
    } else if (c === '/' && text[i + 1] === '/') {
      while (i < text.length && text[i] !== '\n') i++;
      out += '\n';
    } else out += c;
  }
  return out;
}

export function parseSpec(text: string, source = 'spec'): MessageSpec {
  let spec: MessageSpec;
  try {
    spec = JSON.parse(stripJsonComments(text)) as MessageSpec;
  } catch (e) {
    throw new Error(`${source}: ${(e as Error).message}`);
  }
  if (typeof spec.name !== 'string' || !Array.isArray(spec.fields)) {
    throw new Error(`${source}: not a message spec (name and fields required)`);
  }
  spec.flexibleVersions ??= 'none';
  const normalise = (fields: FieldSpec[]) => {
    for (const f of fields) {
      // A tagged field may leave out "versions": it exists exactly in its tagged versions.
      f.versions ??= f.taggedVersions as string;
      if (f.versions === undefined) throw new Error(`${source}: field ${f.name} has no versions`);
      if (f.fields) normalise(f.fields);
    }
  };
  normalise(spec.fields);
  for (const s of spec.commonStructs ?? []) normalise(s.fields);
  return spec;
}

/** Every spec in a directory, sorted by file name so generation is deterministic. */
export function loadSpecs(dir: string): MessageSpec[] {
  return readdirSync(dir)
    .filter((f) => f.endsWith('.json'))
    .sort()
    .map((f) => parseSpec(readFileSync(join(dir, f), 'utf8'), f));
}
