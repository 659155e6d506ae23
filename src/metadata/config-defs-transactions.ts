/**
 * The transaction coordinator's broker configs (transaction.*, transactional.id.*), kept apart
 * from config-defs.ts's table, which lists them in this place.
 */
import type { ConfigDef, ConfigType } from './config-defs.js';

function def(
  name: string,
  type: ConfigType,
  defaultValue: string,
  doc: string,
  extra: { readonly min?: number; readonly dynamic?: boolean } = {},
): ConfigDef {
  return { name, scope: 'broker', type, defaultValue, doc, ...extra };
}

export const TRANSACTION_BROKER_CONFIGS: readonly ConfigDef[] = [
  def(
    'transaction.state.log.replication.factor',
    'short',
    '3',
    'Replication factor of __transaction_state.',
    { min: 1 },
  ),
  def('transaction.state.log.num.partitions', 'int', '50', 'Partitions of __transaction_state.', {
    min: 1,
  }),
  def('transaction.state.log.min.isr', 'int', '2', 'min.insync.replicas of __transaction_state.', {
    min: 1,
  }),
  def('transaction.state.log.segment.bytes', 'int', '104857600', 'Segment size of __transaction_state.', {
    min: 1,
  }),
  def('transaction.max.timeout.ms', 'int', '900000', 'Largest transaction timeout a producer may ask for.', {
    min: 1,
  }),
  def('transactional.id.expiration.ms', 'int', '604800000', 'How long an idle transactional id is kept.', {
    min: 1,
  }),
  def(
    'transaction.abort.timed.out.transaction.cleanup.interval.ms',
    'int',
    '10000',
    'How often transactions past their timeout are aborted.',
    { min: 1 },
  ),
  def(
    'transaction.remove.expired.transaction.cleanup.interval.ms',
    'int',
    '3600000',
    'How often transactional ids past transactional.id.expiration.ms are removed.',
    { min: 1 },
  ),
  def(
    'transaction.partition.verification.enable',
    'boolean',
    'true',
    "KIP-890: a partition leader asks the transaction coordinator whether a transaction's first write to it was added.",
    { dynamic: true },
  ),
];
