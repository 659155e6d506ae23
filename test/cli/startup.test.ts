/**
 * Tools that start fast (issue 17): a command loads only the modules it uses. Each case runs the
 * real command line under load-log.ts and checks the set of module files it loaded — never a
 * time (the `tools` bench measures that).
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { commandList } from '../../src/cli/commands.js';
import { API_MESSAGES } from '../../src/protocol/generated/index.js';
import { SKIFF } from '../support/broker-process.js';
import { type FakeBroker, startFakeBroker } from './fake-broker.js';

/** The build root (dist/ or a private outDir): module files are named relative to it. */
const BUILD = path.resolve(path.dirname(SKIFF), '../..');
const REPO = path.resolve(BUILD, '..');
const LOAD_LOG = new URL('./load-log.js', import.meta.url).href;
const VERSION = JSON.parse(fs.readFileSync(path.join(REPO, 'package.json'), 'utf8')).version as string;

interface Run {
  readonly status: number;
  readonly stdout: string;
  /** Every module file loaded, relative to the build root (`src/cli/cli.js`) or the repository
   * (`node_modules/etcd3/lib/index.js`); Node's builtins and the recorder itself left out. */
  readonly files: readonly string[];
}

async function skiffLoads(args: readonly string[]): Promise<Run> {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-loads-'));
  const log = path.join(dir, 'loads');
  try {
    let status = 0;
    let stdout = '';
    try {
      ({ stdout } = await promisify(execFile)(process.execPath, ['--import', LOAD_LOG, SKIFF, ...args], {
        env: { ...process.env, SKIFF_LOAD_LOG: log },
      }));
    } catch (e) {
      const err = e as { code?: number; stdout?: string };
      status = err.code ?? 1;
      stdout = err.stdout ?? '';
    }
    const files = new Set<string>();
    for (const url of fs.readFileSync(log, 'utf8').split('\n')) {
      if (!url.startsWith('file:')) continue;
      const file = fileURLToPath(url);
      const rel = file.startsWith(BUILD + path.sep) ? path.relative(BUILD, file) : path.relative(REPO, file);
      if (!rel.startsWith('test/')) files.add(rel.split(path.sep).join('/'));
    }
    return { status, stdout, files: [...files].sort() };
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
}

/** What `skiff --help` and `skiff --version` need: the entry, the dispatcher, the table, the version. */
const CLI_ONLY = ['src/cli/cli.js', 'src/cli/commands.js', 'src/cli/main.js', 'src/cli/version.js'];

/** The generated modules any client tool loads: the frame headers and the error table. */
const CLIENT_GENERATED = new Set([
  'errors.js',
  'RequestHeader.js',
  'ResponseHeader.js',
  'MetadataRequest.js',
]);

/** Directories and packages only a broker or the launcher needs. */
const SERVER_ONLY = [
  'src/broker/',
  'src/cluster/',
  'src/controller/',
  'src/coordinator/',
  'src/replication/',
  'src/storage/',
  'src/metadata/etcd-store.js',
  'node_modules/',
];

const generated = (run: Run): Set<string> =>
  new Set(
    run.files
      .filter((f) => f.startsWith('src/protocol/generated/'))
      .map((f) => f.slice('src/protocol/generated/'.length)),
  );

function assertNoServer(run: Run): void {
  const server = run.files.filter((f) => SERVER_ONLY.some((prefix) => f.startsWith(prefix)));
  assert.deepEqual(server, [], 'modules only the broker needs');
  assert.ok(!run.files.includes('src/protocol/generated/index.js'), 'the registry of every API');
}

describe('what a command loads', () => {
  it('skiff --help lists every command from the table and loads nothing else', async () => {
    const run = await skiffLoads(['--help']);
    assert.equal(run.status, 0);
    assert.deepEqual(run.files, CLI_ONLY);
    for (const { name, summary } of commandList()) {
      assert.match(
        run.stdout,
        new RegExp(`^  ${name} +${summary.replace(/[()[\]`.*+?|$^]/g, '\\$&')}$`, 'm'),
      );
    }
  });

  it('skiff --version prints the version in package.json, as Kafka tools print theirs', async () => {
    const run = await skiffLoads(['--version']);
    assert.equal(run.status, 0);
    assert.equal(run.stdout, `${VERSION}\n`);
    assert.match(VERSION, /^\d+\.\d+\.\d+/);
    assert.deepEqual(run.files, CLI_ONLY);
  });

  it('skiff <tool> --version prints it too, without loading the tool; --help wins over it', async () => {
    for (const args of [
      ['topics', '--version'],
      ['broker', '--version'],
      ['topics', '--list', '--version'],
    ]) {
      const run = await skiffLoads(args);
      assert.equal(run.status, 0, args.join(' '));
      assert.equal(run.stdout, `${VERSION}\n`, args.join(' '));
      assert.deepEqual(run.files, CLI_ONLY, args.join(' '));
    }
    const help = await skiffLoads(['topics', '--version', '--help']);
    assert.equal(help.status, 0);
    assert.match(help.stdout, /^Usage: skiff topics/);
  });

  for (const tool of ['topics', 'leader-election']) {
    it(`skiff ${tool} --help loads the tool and the client, but no broker, etcd3 or codecs it does not send`, async () => {
      const run = await skiffLoads([tool, '--help']);
      assert.equal(run.status, 0);
      assert.match(run.stdout, new RegExp(`^Usage: skiff ${tool}`));
      assert.ok(run.files.includes(`src/cli/tools/${tool}.js`));
      assertNoServer(run);
      assert.deepEqual(
        [...generated(run)].filter((f) => !CLIENT_GENERATED.has(f)),
        [],
      );
      const otherTools = run.files.filter(
        (f) =>
          f.startsWith('src/cli/tools/') && f !== `src/cli/tools/${tool}.js` && !f.endsWith('/common.js'),
      );
      assert.deepEqual(otherTools, []);
    });
  }

  describe('skiff topics --list', () => {
    let fake: FakeBroker;
    before(async () => {
      fake = await startFakeBroker(new Map(), [{ name: 'orders', partitions: 1 }]);
    });
    after(() => fake.close());

    it('loads the codecs of the APIs it sends and no others', async () => {
      const run = await skiffLoads(['topics', '--list', '--bootstrap-server', fake.bootstrap]);
      assert.equal(run.status, 0);
      assert.equal(run.stdout, 'orders\n');
      assertNoServer(run);
      const sent = new Set(fake.requests.map((r) => API_MESSAGES.get(r.apiKey)!));
      assert.deepEqual([...sent].map((a) => a.name).sort(), ['ApiVersions', 'Metadata']);
      const expected = new Set(CLIENT_GENERATED);
      for (const api of sent) for (const c of [api.request, api.response]) expected.add(`${c.name}.js`);
      assert.deepEqual([...generated(run)].sort(), [...expected].sort());
    });
  });
});

describe('the command table', () => {
  it("is where every tool's ToolDef takes its name and summary from", async () => {
    for (const { name, summary } of commandList()) {
      const file = ['broker', 'up', 'cluster'].includes(name)
        ? `../../src/cli/${name === 'broker' ? 'broker-command' : name}.js`
        : `../../src/cli/tools/${name}.js`;
      const mod = (await import(file)) as Record<string, unknown>;
      const defs = Object.values(mod).filter(
        (v): v is { name: string; summary: string } =>
          typeof v === 'object' && v !== null && 'usage' in v && 'flags' in v && 'summary' in v,
      );
      assert.deepEqual(
        defs.map((d) => [d.name, d.summary]),
        [[name, summary]],
        file,
      );
    }
  });
});
