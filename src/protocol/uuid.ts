/**
 * Kafka's Uuid: 16 bytes on the wire, shown as 22 characters of URL-safe base64 without padding.
 */
export const ZERO_UUID = 'AAAAAAAAAAAAAAAAAAAAAA';

export function uuidToBytes(uuid: string): Buffer {
  const bytes = Buffer.from(uuid, 'base64url');
  if (bytes.length !== 16) throw new RangeError(`not a Kafka Uuid: ${uuid}`);
  return bytes;
}

export function uuidFromBytes(bytes: Buffer): string {
  return bytes.toString('base64url');
}

export function randomUuid(randomBytes: (n: number) => Buffer): string {
  const b = randomBytes(16);
  return uuidFromBytes(b);
}
