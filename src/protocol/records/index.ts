/** Kafka record batch v2: header access, validation, record codec and compression. */
export * from './batch.js';
export * from './codec.js';
export * from './compression.js';
export * from './record.js';
export * from './validate.js';
