// Jest runs these files as native ES modules: no transform (Babel is not needed), and
// NODE_OPTIONS=--experimental-vm-modules when Jest starts (see README.md).
/** @type {import('jest').Config} */
export default {
  testEnvironment: 'node',
  transform: {},
  // The cluster starts in about a second; a broker's failover takes a few.
  testTimeout: 60_000,
};
