/**
 * The live dashboard in a real browser (playwright-core driving Debian's chromium headless) on a
 * real `skiff up`: it lists a topic; `skiff cluster stop` of a broker shows it down and its
 * partitions under-replicated without a reload; after `cluster start` the ISR expansion appears on
 * the timeline; a SIGKILLed broker's log recoveries are listed after its restart. A screenshot is saved as a test artifact (test-artifacts/dashboard.png, or
 * $SKIFF_TEST_ARTIFACTS).
 */
import assert from 'node:assert/strict';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { type Browser, chromium } from 'playwright-core';
import {
  adminFor,
  freePorts,
  kcat,
  launchSkiffUp,
  removeDataDir,
  requireTool,
  runSkiff,
  type SkiffProcess,
} from '../cluster/helpers.js';

const CHROMIUM = '/usr/bin/chromium';
const REPO = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const ARTIFACTS = process.env.SKIFF_TEST_ARTIFACTS ?? path.join(REPO, 'test-artifacts');

/** A page expression (the tests have no DOM types): the under-replicated count shows `n`. */
const underReplicated = (n: number): string =>
  `document.querySelector('[data-testid=under-replicated]')?.textContent === '${n}'`;

describe('the live dashboard', { timeout: 180_000 }, () => {
  let dir: string;
  let up: SkiffProcess;
  let url: string;
  let bootstrap: string;
  let browser: Browser;

  before(async () => {
    requireTool('kcat', '-V');
    assert.ok(fs.existsSync(CHROMIUM), `${CHROMIUM} is missing (Debian: apt-get install chromium)`);
    dir = fs.mkdtempSync(path.join(os.tmpdir(), 'skiff-dashboard-'));
    fs.writeFileSync(path.join(dir, 'server.properties'), 'default.replication.factor=3\n');
    const port = await freePorts(3);
    bootstrap = [0, 1, 2].map((i) => `127.0.0.1:${port + i}`).join(',');
    up = await launchSkiffUp(dir, port);
    url = /dashboard (http:\/\/127\.0\.0\.1:\d+\/)/.exec(up.output())![1]!;
    browser = await chromium.launch({
      executablePath: CHROMIUM,
      headless: true,
      args: ['--no-sandbox', '--disable-background-networking', '--disable-dev-shm-usage'],
    });
  });

  after(async () => {
    await browser?.close();
    await up?.stop();
    if (dir !== undefined) removeDataDir(dir);
  });

  it('shows a topic, a stopped broker and its under-replicated partitions, then the ISR expansion, live', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 1000 } });
    await page.goto(url);
    await page.waitForSelector('[data-testid=broker-3][data-state=up]', { timeout: 20_000 });
    // Set once: a reload would lose it.
    await page.evaluate('window.skiffLoaded = true');

    const { admin, close } = adminFor(bootstrap);
    try {
      const [r] = await admin.createTopics([{ name: 'watched', numPartitions: 2, replicationFactor: 3 }]);
      assert.equal(r?.error, null);
    } finally {
      close();
    }
    await page.waitForSelector('[data-testid=partition-watched-1]', { timeout: 10_000 });
    const lines = Array.from({ length: 200 }, (_, i) => `record-${i}`).join('\n');
    const produced = await kcat(['-b', bootstrap, '-P', '-t', 'watched', '-X', 'acks=all'], `${lines}\n`);
    assert.equal(produced.status, 0, produced.stderr);

    const stop = await runSkiff(['cluster', 'stop', '2', '--data-dir', dir]);
    assert.equal(stop.status, 0, stop.stderr);
    await page.waitForSelector('[data-testid=broker-2][data-state=down]', { timeout: 10_000 });
    await page.waitForFunction(underReplicated(2), undefined, { timeout: 10_000 });
    assert.equal(
      await page.locator('[data-testid=partition-watched-0]').getAttribute('data-state'),
      'under-replicated',
    );
    // More records while broker 2 is away: it has something to catch up on.
    const more = await kcat(['-b', bootstrap, '-P', '-t', 'watched', '-X', 'acks=all'], `${lines}\n`);
    assert.equal(more.status, 0, more.stderr);

    const start = await runSkiff(['cluster', 'start', '2', '--data-dir', dir]);
    assert.equal(start.status, 0, start.stderr);
    await page.waitForSelector('[data-testid=broker-2][data-state=up]', { timeout: 20_000 });
    await page.waitForSelector('[data-testid=isr-change][data-kind=expand]', { timeout: 30_000 });
    await page.waitForFunction(underReplicated(0), undefined, { timeout: 30_000 });
    assert.equal(await page.evaluate('window.skiffLoaded'), true, 'the page was never reloaded');
    // The controlled shutdown took broker 2 out of both partitions' ISR: on the timeline too.
    const without2 = /\[[\d,]*2[\d,]*\] → \[(?![\d,]*2)[\d,]*\]/;
    const out = await page.locator('[data-testid=isr-change]', { hasText: without2 }).count();
    assert.ok(out >= 2, `both partitions' ISR shrinks of the controlled shutdown on the timeline (${out})`);

    // A SIGKILL leaves no clean-shutdown marker: broker 3 validates its segments again at its start,
    // and the dashboard lists those recoveries.
    const kill = await runSkiff(['cluster', 'stop', '3', '--kill', '--data-dir', dir]);
    assert.equal(kill.status, 0, kill.stderr);
    const again = await runSkiff(['cluster', 'start', '3', '--data-dir', dir]);
    assert.equal(again.status, 0, again.stderr);
    const recovery = page.locator('[data-testid=event][data-event=recovery]', { hasText: 'broker 3' });
    await recovery.first().waitFor({ timeout: 20_000 });
    assert.match((await recovery.first().textContent()) ?? '', /recovered segment 0 \(full validation\)/);

    fs.mkdirSync(ARTIFACTS, { recursive: true });
    const shot = path.join(ARTIFACTS, 'dashboard.png');
    await page.screenshot({ path: shot, fullPage: true });
    assert.ok(fs.statSync(shot).size > 10_000, 'a screenshot with something on it');
    await page.close();
  });
});
