import { benchBroker } from './broker.js';
import { benchCleaner } from './cleaner.js';
import { benchConsumerGroups } from './consumer-groups.js';
import { benchFetchEncode } from './fetch-encode.js';
import { benchMetadata } from './metadata.js';
import { benchMetrics } from './metrics.js';
import { benchRecords } from './records.js';
import { benchRecovery } from './recovery.js';
import { benchReplication } from './replication.js';
import { benchSasl } from './sasl.js';
import { benchScale } from './scale.js';
import { benchStartCluster } from './start-cluster.js';
import { benchStorage } from './storage.js';
import { benchThrottle } from './throttle.js';
import { benchTls } from './tls.js';
import { benchTools } from './tools.js';
import { benchTransactions } from './transactions.js';
import { benchYardsticks } from './yardsticks.js';

/**
 * Every benchmark, run in order by `npm run bench`. Add new ones to this list.
 * `node dist/bench/main.js NAME...` runs only the named ones.
 */
const benches: Record<string, () => Promise<unknown>> = {
  records: benchRecords,
  'fetch-encode': benchFetchEncode,
  storage: benchStorage,
  broker: benchBroker,
  metadata: benchMetadata,
  throttle: benchThrottle,
  replication: benchReplication,
  tools: benchTools,
  'start-cluster': benchStartCluster,
  metrics: benchMetrics,
  cleaner: benchCleaner,
  sasl: benchSasl,
  tls: benchTls,
  transactions: benchTransactions,
  recovery: benchRecovery,
  yardsticks: benchYardsticks,
  'consumer-groups': benchConsumerGroups,
};

/** Run only when named: parts of a bench above, which runs them too (scale: of yardsticks). */
const partsByName: Record<string, () => Promise<unknown>> = {
  scale: benchScale,
};

const only = process.argv.slice(2);
const known = { ...benches, ...partsByName };
const unknown = only.filter((n) => !(n in known));
if (unknown.length > 0) {
  process.stderr.write(`unknown bench ${unknown.join(', ')} (known: ${Object.keys(known).join(', ')})\n`);
  process.exit(2);
}
for (const [name, bench] of Object.entries(known))
  if (only.length === 0 ? name in benches : only.includes(name)) await bench();
