/**
 * The generated references in docs/ are what the code renders now: a config, a tool, a flag or an
 * API version range added, renamed or re-documented without `npm run docs` fails here.
 */
import assert from 'node:assert/strict';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { it } from 'node:test';
import { BROKER_API_VERSIONS } from '../../src/broker/api-versions.js';
import { commandList } from '../../src/cli/commands.js';
import { GROUP_API_VERSIONS } from '../../src/coordinator/group-api.js';
import { BROKER_CONFIGS, TOPIC_CONFIGS } from '../../src/metadata/config-defs.js';
import {
  COMPATIBILITY_REFERENCE_PATH,
  CONFIG_REFERENCE_PATH,
  renderCompatibilityReference,
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

it('docs/compatibility.md is the API version table as it is now (npm run docs rewrites it)', () => {
  const doc = read(COMPATIBILITY_REFERENCE_PATH);
  assert.equal(
    doc,
    renderCompatibilityReference(),
    `${COMPATIBILITY_REFERENCE_PATH} is stale: run npm run docs`,
  );
  for (const [key, range] of [...BROKER_API_VERSIONS, ...GROUP_API_VERSIONS]) {
    const versions = range.min === range.max ? `${range.min}` : `${range.min}–${range.max}`;
    assert.match(doc, new RegExp(`^\\| ${key} \\| \\w+ \\| ${versions}[ |]`, 'm'), `API ${key}`);
  }
});

it("the README's client table links every client compatibility test and every example suite", () => {
  const readme = read('README.md');
  const table = readme.slice(
    readme.indexOf('**Clients tested**'),
    readme.indexOf('## What is not there yet'),
  );
  const compat = readdirSync(join(repoRoot(), 'test/compat')).filter((f) => f.endsWith('.test.ts'));
  const examples = readdirSync(join(repoRoot(), 'examples'), { withFileTypes: true }).filter((d) =>
    d.isDirectory(),
  );
  assert.ok(compat.length > 0 && examples.length > 0);
  for (const f of compat)
    assert.ok(table.includes(`(test/compat/${f})`), `README's client table omits test/compat/${f}`);
  for (const d of examples)
    assert.ok(table.includes(`(examples/${d.name}/)`), `README's client table omits examples/${d.name}`);
});

/** GitHub's anchors of a Markdown file's headings (fenced code skipped). */
function anchors(markdown: string): Set<string> {
  const prose = markdown.replace(/^```[\s\S]*?^```$/gm, '');
  return new Set(
    [...prose.matchAll(/^#{1,6} (.+)$/gm)].map((m) =>
      m[1]!
        .toLowerCase()
        .replace(/[^\p{L}\p{N} _-]/gu, '')
        .replaceAll(' ', '-'),
    ),
  );
}

it('every relative link in README.md and docs/ names a file that exists and, with #, a heading in it', () => {
  const pages = ['README.md', ...readdirSync(join(repoRoot(), 'docs')).map((f) => `docs/${f}`)];
  let count = 0;
  for (const page of pages) {
    const text = read(page).replace(/^```[\s\S]*?^```$/gm, '');
    for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
      if (/^[a-z]+:/.test(target!)) continue;
      const [file, anchor] = target!.split('#') as [string, string | undefined];
      const path = file === '' ? page : join(dirname(page), file);
      assert.ok(existsSync(join(repoRoot(), path)), `${page} links ${target}: no ${path}`);
      if (anchor !== undefined)
        assert.ok(anchors(read(path)).has(anchor), `${page} links ${target}: no heading with that anchor`);
      count++;
    }
  }
  assert.ok(count >= 20, `only ${count} relative links`);
});

/** Repository paths named in prose: `src/...`, `test/...`, ... in backticks or as link targets. */
const NAMED_PATH =
  /[`(]((?:src|test|tools|bench|native|scripts|docs|examples|bin|dashboard)\/[\w./-]*[\w/])[`)#]/g;

it('every repository path README.md and docs/ name (src/..., test/..., ...) exists', () => {
  const pages = ['README.md', ...readdirSync(join(repoRoot(), 'docs')).map((f) => `docs/${f}`)];
  let count = 0;
  for (const page of pages) {
    for (const [, named] of read(page).matchAll(NAMED_PATH)) {
      // A compiled test is named by its source's path; a glob or placeholder names no one file.
      if (/[*<]/.test(named!)) continue;
      assert.ok(existsSync(join(repoRoot(), named!)), `${page} names ${named}, which does not exist`);
      count++;
    }
  }
  assert.ok(count >= 20, `only ${count} paths named`);
});
