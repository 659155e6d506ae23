/**
 * What a consumer group subscribes to, resolved against the cluster's topics: topic names as
 * given, and regular expressions (subscribedTopicRegex) matched against every non-internal topic
 * name, as Kafka does with RE2/J. JavaScript's RegExp stands in for RE2/J: the common syntax
 * (classes, alternation, quantifiers, anchors) is the same; RE2/J refuses backreferences and
 * lookaround, which RegExp accepts, and RE2/J's `\C`, `\pN` one-letter classes and `(?P<name>)`
 * groups are refused here. A whole topic name must match, as Java's Matcher.matches() requires.
 */
import type { ConsumerGroupMember, SubscriptionMetadata } from './consumer-group.js';

export interface TopicView {
  readonly topicId: string;
  readonly numPartitions: number;
  readonly internal: boolean;
}

/** The cluster's topics by name, with a version that changes whenever they do. */
export interface TopicsImage {
  readonly version: number;
  readonly topics: ReadonlyMap<string, TopicView>;
}

/** Compiled regexes, by source; bounded, since member regexes come from clients. */
const MAX_CACHED_PATTERNS = 1_000;

export class TopicMatcher {
  private readonly compiled = new Map<string, RegExp>();

  /** The regex as a whole-name matcher; throws SyntaxError when it is not valid. */
  compile(regex: string): RegExp {
    let re = this.compiled.get(regex);
    if (re === undefined) {
      re = new RegExp(`^(?:${regex})$`);
      if (this.compiled.size >= MAX_CACHED_PATTERNS) this.compiled.clear();
      this.compiled.set(regex, re);
    }
    return re;
  }

  /** Whether the regex is one this broker accepts; null when it is, else why not. */
  invalidReason(regex: string): string | null {
    try {
      this.compile(regex);
      return null;
    } catch (e) {
      return (e as Error).message;
    }
  }

  /** Topic names a member subscribes to, its regex resolved. */
  memberTopics(m: ConsumerGroupMember, image: TopicsImage): Set<string> {
    const names = new Set(m.subscribedTopicNames);
    if (m.subscribedTopicRegex !== null && m.subscribedTopicRegex !== '') {
      const re = this.compile(m.subscribedTopicRegex);
      for (const [name, t] of image.topics) if (!t.internal && re.test(name)) names.add(name);
    }
    return names;
  }

  /** The existing subscribed topics of all the given members, with their ids and partition counts. */
  subscriptionMetadata(members: Iterable<ConsumerGroupMember>, image: TopicsImage): SubscriptionMetadata {
    const out: SubscriptionMetadata = new Map();
    for (const m of members)
      for (const name of this.memberTopics(m, image)) {
        const t = image.topics.get(name);
        if (t !== undefined && !out.has(name))
          out.set(name, { topicId: t.topicId, numPartitions: t.numPartitions });
      }
    return out;
  }
}

export function sameSubscriptionMetadata(a: SubscriptionMetadata, b: SubscriptionMetadata): boolean {
  if (a.size !== b.size) return false;
  for (const [name, t] of a) {
    const o = b.get(name);
    if (o === undefined || o.topicId !== t.topicId || o.numPartitions !== t.numPartitions) return false;
  }
  return true;
}
