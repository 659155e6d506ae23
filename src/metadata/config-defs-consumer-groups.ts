/**
 * The consumer group protocol's broker configs (KIP-848: group.coordinator.rebalance.protocols,
 * group.consumer.*), kept apart from config-defs.ts's table, which lists them in this place.
 * Kafka's per-group overrides (IncrementalAlterConfigs on a GROUP) are not taken, so the min/max
 * bounds only check the broker's own values.
 */
import type { ConfigDef, ConfigType } from './config-defs.js';

function def(
  name: string,
  type: ConfigType,
  defaultValue: string,
  doc: string,
  extra: { readonly min?: number; readonly oneOf?: readonly string[] } = {},
): ConfigDef {
  return { name, scope: 'broker', type, defaultValue, doc, ...extra };
}

export const CONSUMER_GROUP_BROKER_CONFIGS: readonly ConfigDef[] = [
  def(
    'group.coordinator.rebalance.protocols',
    'list',
    'classic,consumer',
    'Enabled rebalance protocols: classic always; consumer serves KIP-848 (ConsumerGroupHeartbeat).',
    { oneOf: ['classic', 'consumer'] },
  ),
  def(
    'group.consumer.session.timeout.ms',
    'int',
    '45000',
    'A consumer-protocol member without a heartbeat for this long is fenced.',
    { min: 1 },
  ),
  def(
    'group.consumer.min.session.timeout.ms',
    'int',
    '45000',
    'Smallest consumer-protocol session timeout.',
    {
      min: 1,
    },
  ),
  def('group.consumer.max.session.timeout.ms', 'int', '60000', 'Largest consumer-protocol session timeout.', {
    min: 1,
  }),
  def(
    'group.consumer.heartbeat.interval.ms',
    'int',
    '5000',
    'The heartbeat interval given to consumer-protocol members.',
    { min: 1 },
  ),
  def(
    'group.consumer.min.heartbeat.interval.ms',
    'int',
    '5000',
    'Smallest consumer-protocol heartbeat interval.',
    {
      min: 1,
    },
  ),
  def(
    'group.consumer.max.heartbeat.interval.ms',
    'int',
    '15000',
    'Largest consumer-protocol heartbeat interval.',
    {
      min: 1,
    },
  ),
  def('group.consumer.max.size', 'int', '2147483647', 'Most members in a consumer-protocol group.', {
    min: 1,
  }),
  def(
    'group.consumer.assignors',
    'list',
    'uniform,range',
    'Server-side assignors (uniform, range, or their Kafka class names); the first is the default.',
  ),
];
