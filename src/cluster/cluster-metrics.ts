/**
 * `skiff up --http-port H`'s /metrics: every running broker child's own exposition, asked for over
 * its IPC channel (no extra port per broker), merged family by family. Each broker labels its
 * samples `node_id`, so a series means the same whether scraped here or from the broker's own
 * `http.listeners`. The launcher adds `skiff_broker_up{node_id}`: a stopped or killed broker has
 * nothing to say for itself. Owned by the Launcher.
 */
import type { ChildProcess } from 'node:child_process';
import { mergeExpositions } from '../metrics/exposition.js';
import { isScrapeAnswer, type ScrapeRequest } from './child-protocol.js';

/** How long a child has to answer a scrape; a busy one is left out of that scrape. */
const SCRAPE_TIMEOUT_MS = 5000;

export interface ScrapedBroker {
  readonly id: number;
  readonly state: string;
  readonly child: ChildProcess | null;
}

export class ChildScraper {
  private nextId = 1;
  private readonly pending = new Map<number, (text: string | null) => void>();

  /** Routes the child's scrape answers; called once per forked child. */
  attach(child: ChildProcess): void {
    child.on('message', (m) => {
      if (!isScrapeAnswer(m)) return;
      this.pending.get(m.id)?.(m.text);
    });
  }

  /** The child's exposition; null when it did not answer in time or is gone. */
  scrape(child: ChildProcess, timeoutMs = SCRAPE_TIMEOUT_MS): Promise<string | null> {
    const id = this.nextId++;
    return new Promise((resolve) => {
      const done = (text: string | null): void => {
        clearTimeout(timer);
        child.off('exit', onExit);
        this.pending.delete(id);
        resolve(text);
      };
      const onExit = (): void => done(null);
      const timer = setTimeout(() => done(null), timeoutMs);
      this.pending.set(id, done);
      child.once('exit', onExit);
      if (!child.connected) return done(null);
      child.send({ skiffLauncher: 'scrape', id } satisfies ScrapeRequest, (e) => {
        if (e) done(null);
      });
    });
  }

  /** The cluster's exposition: every running broker's, then the launcher's view of which are up. */
  async cluster(brokers: readonly ScrapedBroker[]): Promise<string> {
    const texts = await Promise.all(
      brokers.map((b) =>
        b.state === 'running' && b.child !== null ? this.scrape(b.child) : Promise.resolve(null),
      ),
    );
    const up = [
      '# HELP skiff_broker_up 1 when the launcher runs the broker (listening), else 0 (stopped, killed, starting)',
      '# TYPE skiff_broker_up gauge',
      ...brokers.map((b) => `skiff_broker_up{node_id="${b.id}"} ${b.state === 'running' ? 1 : 0}`),
    ].join('\n');
    return mergeExpositions([...texts.filter((t): t is string => t !== null), up]);
  }
}
