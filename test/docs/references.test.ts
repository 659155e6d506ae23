/**
 * The generated references in docs/ are what the code renders now: a config, a tool or a flag
 * added, renamed or re-documented without `npm run docs` fails here.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { it } from 'node:test';
import { commandList } from '../../src/cli/commands.js';
import { BROKER_CONFIGS, TOPIC_CONFIGS } from '../../src/metadata/config-defs.js';
import {
  CONFIG_REFERENCE_PATH,
  renderConfigReference,
  renderToolReference,
  TOOL_REFERENCE_PATH,
} from '../../tools/docs/reference.js';
import { repoRoot } from '../../tools/errors/generate.js';

const read = (p: string) => readFileSync(join(repoRoot(), p), 'utf8');

it('docs/configuration.md is the config table as it is now (npm run docs rewrites it)', () => {
  const doc = read(CONFIG_REFERENCE_PATH);
  assert.equal(doc, renderConfigReference(), `${CONFIG_REFERENCE_PATH} is stale: run npm run docs`);
  for (const d of [...BROKER_CONFIGS, ...TOPIC_CONFIGS]) assert.ok(doc.includes(`| \`${d.name}\` |`), d.name);
});

it("docs/tools.md is every subcommand's --help as it is now (npm run docs rewrites it)", async () => {
  const doc = read(TOOL_REFERENCE_PATH);
  assert.equal(doc, await renderToolReference(), `${TOOL_REFERENCE_PATH} is stale: run npm run docs`);
  for (const c of commandList()) assert.ok(doc.includes(`## skiff ${c.name}\n`), c.name);
});
