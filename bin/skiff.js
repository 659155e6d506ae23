#!/usr/bin/env node
// Entry point for the `skiff` command; the TypeScript is compiled to dist/ by `npm ci` (prepare).
// main.js turns on Node's compile cache (Node 22.1+) before it loads the rest.
import '../dist/src/cli/main.js';
