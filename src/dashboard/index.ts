/**
 * The live dashboard on a launcher's HTTP port (`skiff up --http-port H`, startCluster): one
 * client bootstrapped with every broker, the collector, and the page's routes.
 */
import { KafkaClient } from '../client/kafka-client.js';
import { parseBootstrap, systemRuntime } from '../client/runtime.js';
import { type ClusterSource, Collector } from './collector.js';
import { createDashboard } from './server.js';

export interface DashboardHost extends ClusterSource {
  /** `host:port,...` of every broker. */
  bootstrap(): string;
  mountHttp(routes: { handle: ReturnType<typeof createDashboard>['handle'] }): void;
}

/** Mounts the dashboard on the host's HTTP port; the returned function stops it. */
export function serveDashboard(host: DashboardHost, onError: (e: Error) => void): () => void {
  const runtime = systemRuntime();
  const client = new KafkaClient({
    bootstrap: parseBootstrap(host.bootstrap()),
    clientId: 'skiff-dashboard',
    runtime,
    requestTimeoutMs: 5_000,
    // A stopped broker is shown as down, not retried for seconds.
    retries: 0,
  });
  const dashboard = createDashboard(new Collector(host, client, () => runtime.clock.nowMs()), { onError });
  host.mountHttp(dashboard);
  return () => {
    dashboard.close();
    client.close();
  };
}
