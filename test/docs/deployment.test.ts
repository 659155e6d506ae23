/**
 * docs/deployment.md run as written, on loopback: three etcd processes started from the guide's
 * /etc/default/etcd (its ETCD_* variables, name and advertised URLs changed per member as the guide
 * says) until each reports healthy, then the guide's own blocks — its server.properties for
 * brokers 1..3 (node.id and host changed as the guide says), its systemd unit (checked with
 * systemd-analyze verify when the machine has it; its ExecStart is how each broker is started),
 * topic creation with the documented output, a rolling restart (`systemctl restart skiff` is a
 * SIGTERM and the ExecStart again) waiting on --under-replicated-partitions after each broker,
 * then a fourth broker and the reassignment of the topic onto it, then the backups (etcdctl's
 * snapshot, a stopped broker's log dir in a tar archive). Substituted: every kafkaN:9092
 * and etcdN:2379/2380 (and the 0.0.0.0 listeners on host N) by free ports of host N on 127.0.0.1,
 * /etc/skiff, /var/lib/skiff, /var/lib/etcd, /var/backups and /usr/local/bin/skiff by a directory
 * per host, `sleep 5` by `sleep 0.5`.
 */
import assert from 'node:assert/strict';
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import * as path from 'node:path';
import { after, before, it } from 'node:test';
import { repoRoot } from '../../tools/errors/generate.js';
import {
  adminFor,
  describe1,
  freePorts,
  removeDataDir,
  requireTool,
  SkiffProcess,
  waitUntil,
} from '../cluster/helpers.js';
import { runProcess } from '../support/broker-process.js';
import { type Block, fencedBlocks, linePattern } from '../support/doc-blocks.js';

const ROOT = repoRoot();
const blocks = fencedBlocks(readFileSync(path.join(ROOT, 'docs', 'deployment.md'), 'utf8'));
const named = (name: string): Block => {
  const b = blocks.find((x) => x.name === name);
  assert.ok(b, `docs/deployment.md has no block named ${name}`);
  return b;
};
/** The text block right after the named one: the output lines documented for it. */
const outputOf = (name: string): string[] => {
  const i = blocks.indexOf(named(name));
  const next = blocks[i + 1];
  return next?.lang === 'text' ? next.body.split('\n').filter((l) => l.trim() !== '') : [];
};

let dir: string;
let base: number;
/** Members 1..3: client port etcdBase + 2(n-1), peer port the next. */
let etcdBase: number;
const etcd: ChildProcess[] = [];
let env: NodeJS.ProcessEnv;
const brokers = new Map<number, SkiffProcess>();

/** The guide's text as it applies on host kafka`host` of this loopback cluster. */
function local(text: string, host: number): string {
  const hostDir = path.join(dir, `host${host}`);
  const etcdPort = (n: number, port: string) => etcdBase + 2 * (n - 1) + (port === '2380' ? 1 : 0);
  return text
    .replaceAll('0.0.0.0:9092', `127.0.0.1:${base + host - 1}`)
    .replace(/0\.0\.0\.0:(2379|2380)/g, (_, port: string) => `127.0.0.1:${etcdPort(host, port)}`)
    .replace(/kafka(\d):9092/g, (_, n: string) => `127.0.0.1:${base + Number(n) - 1}`)
    .replace(
      /(?<==http:\/\/|\/\/)etcd(\d):(2379|2380)/g,
      (_, n: string, port: string) => `127.0.0.1:${etcdPort(Number(n), port)}`,
    )
    .replaceAll('/usr/local/bin/skiff', path.join(dir, 'bin', 'skiff'))
    .replaceAll('/etc/skiff', path.join(hostDir, 'etc'))
    .replaceAll('/var/lib/skiff', path.join(hostDir, 'var'))
    .replaceAll('/var/lib/etcd', path.join(hostDir, 'etcd'))
    .replaceAll('/var/backups', path.join(hostDir, 'backups'))
    .replaceAll('sleep 5', 'sleep 0.5');
}

/** Member `n` started as Debian's etcd service starts it: no flags, its /etc/default/etcd as env. */
async function startEtcd(n: number): Promise<void> {
  const own = named('etcd-defaults')
    .body.replace(/^ETCD_NAME=etcd1$/m, `ETCD_NAME=etcd${n}`)
    .replace(/^(ETCD_(?:INITIAL_ADVERTISE_PEER|ADVERTISE_CLIENT)_URLS=http:\/\/)etcd1:/gm, `$1etcd${n}:`);
  const vars = Object.fromEntries(
    local(own, n)
      .split('\n')
      .filter((l) => /^ETCD_\w+=/.test(l))
      .map((l) => [l.slice(0, l.indexOf('=')), l.slice(l.indexOf('=') + 1)]),
  );
  assert.equal(vars.ETCD_NAME, `etcd${n}`);
  etcd.push(spawn('etcd', [], { env: { PATH: process.env.PATH, ...vars }, stdio: 'ignore' }));
  const url = `http://127.0.0.1:${etcdBase + 2 * (n - 1)}/health`;
  await waitUntil(
    `etcd${n} healthy`,
    async () => {
      const r = await fetch(url, { signal: AbortSignal.timeout(1000) }).catch(() => undefined);
      return r !== undefined && ((await r.json()) as { health?: string }).health === 'true'
        ? true
        : undefined;
    },
    20_000,
  );
}

/** server.properties of broker `id`: the guide's (kafka1's) with node.id and host changed. */
function writeProperties(id: number): void {
  const text = named('server.properties')
    .body.replace(/^node\.id=1$/m, `node.id=${id}`)
    .replaceAll('kafka1', `kafka${id}`);
  assert.match(text, new RegExp(`^advertised.listeners=PLAINTEXT://kafka${id}:9092$`, 'm'));
  mkdirSync(path.join(dir, `host${id}`, 'etc'), { recursive: true });
  mkdirSync(path.join(dir, `host${id}`, 'backups'));
  writeFileSync(local('/etc/skiff/server.properties', id), local(text, id));
}

/** `systemctl start skiff` on host `id`: the unit's ExecStart, until the broker says it is ready. */
async function start(id: number): Promise<void> {
  const exec = /^ExecStart=(.+)$/m.exec(named('skiff.service').body)?.[1];
  assert.ok(exec, 'the unit has an ExecStart');
  const [command, ...args] = local(exec, id).split(' ');
  const p = new SkiffProcess(args, spawn(command!, args, { env, stdio: ['ignore', 'pipe', 'pipe'] }));
  brokers.set(id, p);
  await p.waitFor(new RegExp(`skiff broker ${id} ready: listening on`), 30_000);
}

/**
 * Runs a block on host `host`: `sudo systemctl stop|start|restart skiff` as systemd would do it
 * (SIGTERM, a clean exit; the unit's ExecStart), the other lines, without `sudo`, as one shell
 * script per run of lines, stopping at the first failure. Returns what they print, both streams
 * (as a terminal shows them).
 */
async function run(block: string, host = 1): Promise<string> {
  let out = '';
  let script: string[] = [];
  const starting: Promise<void>[] = [];
  const flush = async (): Promise<void> => {
    if (script.length === 0) return;
    const text = local(script.join('\n'), host);
    script = [];
    const r = await runProcess('sh', ['-e', '-c', text], '', 60_000, { cwd: path.join(dir, 'admin'), env });
    assert.equal(r.status, 0, `${text} exited ${r.status}:\n${r.stdout}${r.stderr}`);
    out += r.stdout + r.stderr;
  };
  for (const line of block.split('\n')) {
    const systemctl = /^sudo systemctl (stop|start|restart) skiff$/.exec(line)?.[1];
    if (systemctl === undefined) {
      if (line.trim() !== '') script.push(line.replace(/^sudo /, ''));
      continue;
    }
    await flush();
    if (systemctl !== 'start') {
      const stopped = await brokers.get(host)!.stop();
      assert.deepEqual(stopped, { code: 0, signal: null }, `broker ${host}: a clean stop`);
    }
    // systemctl returns once the process runs; the block's next lines wait for it as they say.
    if (systemctl !== 'stop') starting.push(start(host));
  }
  await flush();
  await Promise.all(starting);
  return out;
}

function assertDocumented(name: string, output: string): void {
  const lines = outputOf(name);
  assert.ok(lines.length > 0, `no output documented after the ${name} block`);
  for (const line of lines)
    assert.match(output, linePattern(local(line, 1)), `${name}: not printed: ${line}`);
}

/** Every partition of orders with its whole replica set in the ISR; the replica sets. */
async function fullyReplicated(bootstrap: number[]): Promise<number[][]> {
  const { admin, close } = adminFor(bootstrap.map((n) => `127.0.0.1:${base + n - 1}`).join(','));
  try {
    const t = await describe1(admin, 'orders');
    for (const p of t.partitions)
      assert.deepEqual([...p.isr].sort(), [...p.replicas].sort(), `orders-${p.partition} under-replicated`);
    return t.partitions.map((p) => [...p.replicas]);
  } finally {
    close();
  }
}

before(async () => {
  requireTool('etcd', '--version');
  dir = mkdtempSync(path.join(tmpdir(), 'skiff-deployment-'));
  base = await freePorts(4);
  etcdBase = await freePorts(6);
  mkdirSync(path.join(dir, 'bin'));
  mkdirSync(path.join(dir, 'admin'));
  symlinkSync(path.join(ROOT, 'bin', 'skiff.js'), path.join(dir, 'bin', 'skiff'));
  // `skiff` on PATH as the guide's symlink puts it; `node` for its shebang.
  env = {
    ...process.env,
    PATH: [path.join(dir, 'bin'), path.dirname(process.execPath), process.env.PATH].join(path.delimiter),
  };
  // The members wait for each other's peers: started together.
  await Promise.all([1, 2, 3].map((n) => startEtcd(n)));
});

after(async () => {
  await Promise.all([...brokers.values()].map((b) => b.kill()));
  for (const e of etcd) e.kill('SIGKILL');
  if (dir !== undefined) removeDataDir(dir);
});

it('the systemd unit passes systemd-analyze verify (when the machine has systemd-analyze)', (t) => {
  if (spawnSync('systemd-analyze', ['--version']).status !== 0) return t.skip('no systemd-analyze');
  const unit = path.join(dir, 'skiff.service');
  writeFileSync(unit, local(named('skiff.service').body, 1));
  const r = spawnSync('systemd-analyze', ['verify', unit], { encoding: 'utf8', env });
  assert.equal(r.status, 0, `systemd-analyze verify: ${r.stdout}${r.stderr}`);
});

it("three brokers from the guide's server.properties and unit; topic creation prints what the guide shows", async () => {
  for (const id of [1, 2, 3]) writeProperties(id);
  await Promise.all([1, 2, 3].map((id) => start(id)));
  assertDocumented('create-topic', await run(named('create-topic').body));
  await waitUntil(
    'orders fully replicated',
    () =>
      fullyReplicated([1, 2, 3]).then(
        () => true,
        () => undefined,
      ),
    15_000,
  );
});

it('rolling restart: each broker restarted in turn, the next only once --under-replicated-partitions prints nothing', async () => {
  const block = named('rolling-restart').body;
  assert.match(block, /^sudo systemctl restart skiff$/m);
  for (const id of [1, 2, 3]) {
    await run(block, id);
    // The wait is what it promises: nothing under-replicated when it returns.
    await fullyReplicated([1, 2, 3]);
  }
});

it("a fourth broker; the guide's --generate/--execute/--verify move partitions of orders onto it", async () => {
  writeProperties(4);
  await start(4);
  assertDocumented('reassign', await run(named('reassign').body));
  const replicas = await fullyReplicated([1, 2, 3, 4]);
  assert.ok(
    replicas.some((r) => r.includes(4)),
    `no replica on broker 4: ${JSON.stringify(replicas)}`,
  );
  assert.ok(replicas.every((r) => r.length === 3));
});

it("backing up: the guide's etcdctl snapshot of the metadata, and a stopped broker's log dir", async () => {
  requireTool('etcdctl', 'version');
  assertDocumented('etcd-backup', await run(named('etcd-backup').body));
  await run(named('log-dirs-backup').body, 2);
  const listing = await runProcess('tar', ['-tzf', local('/var/backups/skiff-data.tar.gz', 2)]);
  assert.match(listing.stdout, /^data\/meta\.properties$/m);
  assert.match(listing.stdout, /^data\/orders-\d+\/0{20}\.log$/m);
  await fullyReplicated([1, 2, 3, 4]);
});
