/**
 * Just enough of the consumer's embedded protocol (ConsumerProtocolSubscription) to know which
 * topics a "consumer" group subscribes to: OffsetDelete refuses to delete offsets of a subscribed
 * topic, and offsets of subscribed topics never expire while the group is active.
 */
import { Reader } from '../protocol/reader.js';

/** The protocol type the Java, librdkafka and JS consumers register with. */
export const CONSUMER_PROTOCOL_TYPE = 'consumer';

/**
 * Topics named in one member's subscription, or undefined when the bytes are not a subscription
 * we can read. Every version starts with the int16 version and the topic array and only appends
 * fields after it, so a version newer than we know still yields its topics, as in Kafka.
 */
export function subscribedTopics(subscription: Buffer): string[] | undefined {
  try {
    const r = new Reader(subscription);
    const version = r.int16();
    if (version < 0) return undefined;
    const n = r.arrayLength();
    if (n < 0) return undefined;
    const topics: string[] = [];
    for (let i = 0; i < n; i++) topics.push(r.string());
    return topics;
  } catch {
    return undefined;
  }
}
