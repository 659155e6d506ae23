/**
 * The small shared vocabulary of the generated codecs (src/protocol/generated). Generated modules
 * decide per field and version *what* to write; these helpers decide *how* for the encodings that
 * depend on flexibility and nullability (compact vs classic lengths, -1 vs 0 for null).
 */
import { ProtocolError, UnsupportedVersionError } from './protocol-error.js';
import type { Reader } from './reader.js';
import { Writer } from './writer.js';

export { ProtocolError, UnsupportedVersionError } from './protocol-error.js';
export { Reader } from './reader.js';
export { ZERO_UUID } from './uuid.js';
export { Writer } from './writer.js';

/** What every generated message exports as its codec. */
export interface MessageCodec<T> {
  readonly name: string;
  readonly apiKey: number;
  readonly minVersion: number;
  readonly maxVersion: number;
  /** Lowest flexible version, or -1 when the message is never flexible. */
  readonly flexibleMinVersion: number;
  encode(w: Writer, value: T, version: number): void;
  decode(r: Reader, version: number): T;
  defaults(): T;
}

export function checkVersion(name: string, version: number, min: number, max: number): void {
  if (!Number.isInteger(version) || version < min || version > max) {
    throw new UnsupportedVersionError(`${name} has no version ${version} (valid: ${min}-${max})`);
  }
}

export function unsupported(field: string, version: number): never {
  throw new UnsupportedVersionError(`field ${field} cannot be sent at version ${version}`);
}

function nonNullable(field: string, version: number): never {
  throw new UnsupportedVersionError(`field ${field} is null but is not nullable at version ${version}`);
}

function nullOnWire(): never {
  throw new ProtocolError('null received for a non-nullable field');
}

export const EMPTY_BYTES: Buffer = Buffer.alloc(0);

// Strings
export function readString(r: Reader, flexible: boolean): string {
  return flexible ? r.compactString() : r.string();
}
export function readNullableString(r: Reader, flexible: boolean): string | null {
  return flexible ? r.compactNullableString() : r.nullableString();
}
export function writeString(
  w: Writer,
  v: string | null,
  flexible: boolean,
  nullable: boolean,
  field: string,
  version: number,
): void {
  if (v === null) {
    if (!nullable) nonNullable(field, version);
    if (flexible) w.uvarint(0);
    else w.int16(-1);
  } else if (flexible) w.compactString(v);
  else w.string(v);
}

// Bytes and records share one encoding; records stay undecoded views of the frame.
export function readBytes(r: Reader, flexible: boolean): Buffer {
  return flexible ? r.compactBytes() : r.bytes();
}
export function readNullableBytes(r: Reader, flexible: boolean): Buffer | null {
  return flexible ? r.compactNullableBytes() : r.nullableBytes();
}
export function writeBytes(
  w: Writer,
  v: Buffer | null,
  flexible: boolean,
  nullable: boolean,
  field: string,
  version: number,
): void {
  if (v === null) {
    if (!nullable) nonNullable(field, version);
    if (flexible) w.uvarint(0);
    else w.int32(-1);
  } else if (flexible) w.compactBytes(v);
  else w.bytes(v);
}

// Arrays
function readLength(r: Reader, flexible: boolean): number {
  return flexible ? r.compactArrayLength() : r.arrayLength();
}
export function readArray<T>(r: Reader, flexible: boolean, readElem: (r: Reader) => T): T[] {
  const n = readLength(r, flexible);
  if (n < 0) nullOnWire();
  const out: T[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = readElem(r);
  return out;
}
export function readNullableArray<T>(r: Reader, flexible: boolean, readElem: (r: Reader) => T): T[] | null {
  const n = readLength(r, flexible);
  if (n < 0) return null;
  const out: T[] = new Array(n);
  for (let i = 0; i < n; i++) out[i] = readElem(r);
  return out;
}
export function writeArray<T>(
  w: Writer,
  v: readonly T[] | null,
  flexible: boolean,
  nullable: boolean,
  field: string,
  version: number,
  writeElem: (w: Writer, e: T) => void,
): void {
  if (v === null) {
    if (!nullable) nonNullable(field, version);
    if (flexible) w.uvarint(0);
    else w.int32(-1);
    return;
  }
  if (flexible) w.uvarint(v.length + 1);
  else w.int32(v.length);
  for (const e of v) writeElem(w, e);
}

// Nullable structs carry a one-byte presence marker: -1 for null, 1 for present.
export function readNullableStruct<T>(r: Reader, read: (r: Reader) => T): T | null {
  return r.int8() < 0 ? null : read(r);
}
export function writeStruct<T>(
  w: Writer,
  v: T | null,
  nullable: boolean,
  field: string,
  version: number,
  write: (w: Writer, v: T) => void,
): void {
  if (nullable) {
    if (v === null) {
      w.int8(-1);
      return;
    }
    w.int8(1);
  } else if (v === null) nonNullable(field, version);
  write(w, v as T);
}

// Non-nullable struct fields read through this, so the call site reads like the others.
export function readStruct<T>(r: Reader, read: (r: Reader) => T): T {
  return read(r);
}

/** True when two encodings are byte-identical: a tagged struct equal to its default is not sent. */
export function sameEncoding(a: (w: Writer) => void, b: (w: Writer) => void): boolean {
  const wa = new Writer(64);
  const wb = new Writer(64);
  a(wa);
  b(wb);
  return wa.toBuffer().equals(wb.toBuffer());
}

/** Collects the tagged fields of one struct, then writes them in ascending tag order. */
export class TaggedFields {
  private readonly fields: { tag: number; body: Writer }[] = [];

  add(tag: number, write: (w: Writer) => void): void {
    const body = new Writer(64);
    write(body);
    this.fields.push({ tag, body });
  }

  writeTo(w: Writer): void {
    w.uvarint(this.fields.length);
    for (const { tag, body } of this.fields) {
      w.uvarint(tag).uvarint(body.length);
      for (const chunk of body.chunksView()) w.raw(chunk);
    }
  }
}

// Element readers and writers for arrays of primitives.
export const elem = {
  int8: (r: Reader) => r.int8(),
  int16: (r: Reader) => r.int16(),
  uint16: (r: Reader) => r.uint16(),
  int32: (r: Reader) => r.int32(),
  uint32: (r: Reader) => r.uint32(),
  int64: (r: Reader) => r.int64(),
  float64: (r: Reader) => r.float64(),
  bool: (r: Reader) => r.bool(),
  uuid: (r: Reader) => r.uuid(),
};
export const writeElem = {
  int8: (w: Writer, v: number) => void w.int8(v),
  int16: (w: Writer, v: number) => void w.int16(v),
  uint16: (w: Writer, v: number) => void w.uint16(v),
  int32: (w: Writer, v: number) => void w.int32(v),
  uint32: (w: Writer, v: number) => void w.uint32(v),
  int64: (w: Writer, v: bigint) => void w.int64(v),
  float64: (w: Writer, v: number) => void w.float64(v),
  bool: (w: Writer, v: boolean) => void w.bool(v),
  uuid: (w: Writer, v: string) => void w.uuid(v),
};
