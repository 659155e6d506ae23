/**
 * Test support: the Kafka message specs and the generated codec for each, plus fast-check
 * arbitraries that build a valid value of any message at any version from its spec.
 */
import { randomBytes } from 'node:crypto';
import { resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import type { MessageCodec } from '../../src/protocol/codec-runtime.js';
import {
  camel,
  collectStructs,
  elementType,
  isArrayType,
  isPrimitive,
  structTypeNames,
} from '../../tools/codegen/emit.js';
import {
  contains,
  type FieldSpec,
  loadSpecs,
  type MessageSpec,
  parseVersions,
} from '../../tools/codegen/spec.js';

export const REPO_ROOT = resolve(fileURLToPath(import.meta.url), '../../../..');
export const SPEC_DIR = resolve(REPO_ROOT, '../shared/kafka-protocol/message');

export interface LoadedMessage {
  spec: MessageSpec;
  codec: MessageCodec<unknown>;
  module: Record<string, unknown>;
}

export const COORDINATOR_SPEC_DIR = resolve(SPEC_DIR, '../coordinator');
/** Skiff's own APIs (key 10000 and up), generated next to Kafka's. */
export const SKIFF_SPEC_DIR = resolve(REPO_ROOT, 'tools/codegen/skiff-specs');

/** Every message spec (Kafka's and Skiff's) and every coordinator record schema, with its generated module. */
export async function loadMessages(): Promise<LoadedMessage[]> {
  const out: LoadedMessage[] = [];
  const sets: [string, string][] = [
    [SPEC_DIR, ''],
    [SKIFF_SPEC_DIR, ''],
    [COORDINATOR_SPEC_DIR, 'coordinator/'],
  ];
  for (const [dir, sub] of sets) {
    for (const spec of loadSpecs(dir)) {
      const module = (await import(`../../src/protocol/generated/${sub}${spec.name}.js`)) as Record<
        string,
        unknown
      >;
      out.push({ spec, codec: module[`${spec.name}Codec`] as MessageCodec<unknown>, module });
    }
  }
  return out;
}

export function versionsOf(codec: MessageCodec<unknown>): number[] {
  const vs: number[] = [];
  for (let v = codec.minVersion; v <= codec.maxVersion; v++) vs.push(v);
  return vs;
}

const uuidArb = fc
  .uint8Array({ minLength: 16, maxLength: 16 })
  .map((b) => Buffer.from(b).toString('base64url'));
const bytesArb = fc.uint8Array({ maxLength: 24 }).map((b) => Buffer.from(b));
const stringArb = fc.string({ unit: 'grapheme', maxLength: 12 });

function primitiveArb(type: string): fc.Arbitrary<unknown> {
  switch (type) {
    case 'int8':
      return fc.integer({ min: -128, max: 127 });
    case 'int16':
      return fc.integer({ min: -32768, max: 32767 });
    case 'uint16':
      return fc.integer({ min: 0, max: 65535 });
    case 'int32':
      return fc.integer({ min: -(2 ** 31), max: 2 ** 31 - 1 });
    case 'uint32':
      return fc.integer({ min: 0, max: 2 ** 32 - 1 });
    case 'int64':
      return fc.bigInt({ min: -(2n ** 63n), max: 2n ** 63n - 1n });
    case 'float64':
      return fc.double();
    case 'bool':
      return fc.boolean();
    case 'uuid':
      return uuidArb;
    case 'string':
      return stringArb;
    case 'bytes':
    case 'records':
      return bytesArb;
    default:
      throw new Error(`not a primitive: ${type}`);
  }
}

/** Arbitrary values of a message at one version: absent fields keep their defaults. */
export function messageArb(m: LoadedMessage, version: number): fc.Arbitrary<unknown> {
  const structs = collectStructs(m.spec);
  const names = structTypeNames(m.spec, structs);
  const defaults = (struct: string) =>
    (m.module[`default${names.get(struct)}`] as () => Record<string, unknown>)();

  const structArb = (struct: string, fields: FieldSpec[], depth: number): fc.Arbitrary<unknown> => {
    const parts: Record<string, fc.Arbitrary<unknown>> = {};
    const base = defaults(struct);
    for (const f of fields) {
      const key = camel(f.name);
      if (!contains(parseVersions(f.versions), version)) {
        parts[key] = fc.constant(base[key]);
        continue;
      }
      const nullable =
        f.nullableVersions !== undefined && contains(parseVersions(f.nullableVersions), version);
      const t = elementType(f.type);
      let elem: fc.Arbitrary<unknown>;
      if (isPrimitive(t)) elem = primitiveArb(t);
      else elem = structArb(t, structs.get(t) as FieldSpec[], depth + 1);
      let arb = isArrayType(f.type) ? fc.array(elem, { maxLength: depth > 2 ? 1 : 3 }) : elem;
      if (nullable) arb = fc.option(arb, { nil: null });
      parts[key] = arb;
    }
    return fc.record(parts, { noNullPrototype: true });
  };
  return structArb(m.spec.name, m.spec.fields, 0);
}

export { randomBytes };
