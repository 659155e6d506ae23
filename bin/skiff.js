#!/usr/bin/env node
// Entry point for the `skiff` command; the TypeScript is compiled to dist/ by `npm ci` (prepare).
import '../dist/src/cli/main.js';
