/** Writes docs/configuration.md, docs/tools.md and docs/compatibility.md from the code (npm run docs). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../errors/generate.js';
import {
  COMPATIBILITY_REFERENCE_PATH,
  CONFIG_REFERENCE_PATH,
  renderCompatibilityReference,
  renderConfigReference,
  renderToolReference,
  TOOL_REFERENCE_PATH,
} from './reference.js';

const root = repoRoot();
writeFileSync(join(root, CONFIG_REFERENCE_PATH), renderConfigReference());
writeFileSync(join(root, TOOL_REFERENCE_PATH), await renderToolReference());
writeFileSync(join(root, COMPATIBILITY_REFERENCE_PATH), renderCompatibilityReference());
console.log(`wrote ${CONFIG_REFERENCE_PATH}, ${TOOL_REFERENCE_PATH} and ${COMPATIBILITY_REFERENCE_PATH}`);
