/**
 * The `skiff` package: a real Kafka-compatible cluster from code, for test suites.
 *
 *   import { startCluster } from 'skiff';
 *   const cluster = await startCluster({ brokers: 3 });
 *   // clients connect to cluster.bootstrapServers
 *   await cluster.close();
 */
export {
  type BrokerInfo,
  type ConfigValue,
  type CreateTopicOptions,
  type SkiffCluster,
  type StartClusterOptions,
  startCluster,
  startSingleBroker,
} from './start-cluster.js';
