/**
 * Dynamic configs on running logs: a topic's effective log config is the broker's static log
 * config with, on top, whatever the metadata image sets dynamically — per-broker or cluster-default
 * broker configs (log.segment.bytes, log.retention.ms...) and the topic's own overrides
 * (segment.bytes, retention.ms...). Kafka applies these from its config handlers
 * (TopicConfigHandler, BrokerConfigHandler → LogManager.updateTopicConfig / reconfigureDefaultLogConfig).
 */
import type { MetadataImage } from '../metadata/cluster-metadata.js';
import { TOPIC_CONFIGS } from '../metadata/config-defs.js';
import { DEFAULT_BROKER_ENTITY, resolveTopicConfig } from '../metadata/config-resolve.js';
import type { LogConfig } from '../storage/log-config.js';
import type { LogManager } from '../storage/log-manager.js';
import { topicLogConfig } from './config.js';

/** The log config of `topic` under `image`: static base, then dynamic broker configs, then the topic's. */
export function effectiveLogConfig(
  base: LogConfig,
  image: Pick<MetadataImage, 'topicConfigs' | 'brokerConfigs'>,
  brokerId: number,
  topic: string,
): LogConfig {
  // Static properties are already in `base`; only dynamic layers are resolved here, so a test or
  // a caller that built `base` by hand keeps it unless something was changed at run time.
  const layers = {
    topic: image.topicConfigs.get(topic) ?? {},
    broker: image.brokerConfigs.get(String(brokerId)) ?? {},
    clusterDefault: image.brokerConfigs.get(DEFAULT_BROKER_ENTITY) ?? {},
  };
  if (
    Object.keys(layers.topic).length === 0 &&
    Object.keys(layers.broker).length === 0 &&
    Object.keys(layers.clusterDefault).length === 0
  ) {
    return base;
  }
  const overrides: Record<string, string> = {};
  for (const def of TOPIC_CONFIGS) {
    const r = resolveTopicConfig(def.name, layers);
    if (r.source !== 'DEFAULT_CONFIG' && r.value !== null) overrides[def.name] = r.value;
  }
  return topicLogConfig(base, overrides);
}

/**
 * A topic config's value when something dynamic sets it (the topic's override, or a dynamic broker
 * synonym); undefined when it comes from the static properties or the default, which the caller
 * already holds in its BrokerConfig.
 */
export function dynamicTopicConfigValue(
  image: Pick<MetadataImage, 'topicConfigs' | 'brokerConfigs'>,
  brokerId: number,
  topic: string,
  name: string,
): string | undefined {
  const r = resolveTopicConfig(name, {
    topic: image.topicConfigs.get(topic) ?? {},
    broker: image.brokerConfigs.get(String(brokerId)) ?? {},
    clusterDefault: image.brokerConfigs.get(DEFAULT_BROKER_ENTITY) ?? {},
  });
  return r.source === 'DEFAULT_CONFIG' || r.value === null ? undefined : r.value;
}

/** min.insync.replicas of a topic: dynamic value if any, else the broker's static one. */
export function minInsyncReplicasOf(
  image: Pick<MetadataImage, 'topicConfigs' | 'brokerConfigs'>,
  brokerId: number,
  staticValue: number,
  topic: string,
): number {
  const v = dynamicTopicConfigValue(image, brokerId, topic, 'min.insync.replicas');
  return v === undefined ? staticValue : Number(v);
}

function sameConfig(a: LogConfig, b: LogConfig): boolean {
  for (const k of Object.keys(a) as (keyof LogConfig)[]) if (a[k] !== b[k]) return false;
  return true;
}

/**
 * Re-applies configs to every running log when the image's dynamic configs changed (the image
 * keeps unchanged config maps by identity, so an unrelated change costs two comparisons).
 * Returns how many logs got a new config.
 */
export function applyDynamicConfigs(
  logManager: LogManager,
  base: LogConfig,
  brokerId: number,
  image: MetadataImage,
  previous: MetadataImage,
): number {
  if (image.topicConfigs === previous.topicConfigs && image.brokerConfigs === previous.brokerConfigs)
    return 0;
  let changed = 0;
  const byTopic = new Map<string, LogConfig>();
  for (const log of logManager.allLogs()) {
    let next = byTopic.get(log.topic);
    if (next === undefined) {
      next = effectiveLogConfig(base, image, brokerId, log.topic);
      byTopic.set(log.topic, next);
    }
    if (sameConfig(log.config, next)) continue;
    log.local.updateConfig(next);
    changed++;
  }
  return changed;
}
