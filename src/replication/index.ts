/**
 * Replication: the leader side (follower state, ISR shrink/expand with one change in flight, HW,
 * acks=all), the follower side (fetch, truncation by epoch, catch-up or rebuild), the replica
 * fetcher over an injected transport, and Skiff's truthful offsetLag. See README.md for how the
 * broker wires them in.
 */
export * from './fetcher.js';
export * from './follower.js';
export * from './leader-fetch.js';
export * from './leader-state.js';
export * from './offset-lag.js';
export * from './replica-state.js';
export * from './truncation.js';
