/** Writes docs/configuration.md and docs/tools.md from the code (npm run docs). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { repoRoot } from '../errors/generate.js';
import {
  CONFIG_REFERENCE_PATH,
  renderConfigReference,
  renderToolReference,
  TOOL_REFERENCE_PATH,
} from './reference.js';

const root = repoRoot();
writeFileSync(join(root, CONFIG_REFERENCE_PATH), renderConfigReference());
writeFileSync(join(root, TOOL_REFERENCE_PATH), await renderToolReference());
console.log(`wrote ${CONFIG_REFERENCE_PATH} and ${TOOL_REFERENCE_PATH}`);
