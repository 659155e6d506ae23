/**
 * Test helpers: an independent bitwise CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), so
 * known-answer tests do not check the native library against itself.
 */
export function referenceCrc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) {
    crc ^= byte;
    for (let k = 0; k < 8; k++) crc = crc & 1 ? (crc >>> 1) ^ 0x82f63b78 : crc >>> 1;
  }
  return (crc ^ 0xffffffff) >>> 0;
}

/**
 * Real batches from an Apache Kafka 0.11 / 2.x broker, as recorded in kafka-python's record tests
 * (test/record/test_records.py): value "123" with a null key, and value "hdr" with header hkey=hval.
 */
export const KAFKA_BATCH_VALUE_123 = Buffer.from(
  '00000000000000000000003b00000001020318a2700000000000000000015dff7b063c0000015dff7b063c' +
    'ffffffffffffffffffffffffffff0000000112000000010631323300',
  'hex',
);
export const KAFKA_BATCH_WITH_HEADER = Buffer.from(
  '00000000000000000000004500000000025cd8ef520000000000000000016585b6f3c10000016585b6f3c1' +
    'ffffffffffffffffffffffffffff000000012600000001066864720208686b6579086876616c',
  'hex',
);
