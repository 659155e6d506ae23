/**
 * Kafka's topic name rule (Topic.validate): legal characters, not '.' or '..', at most 249
 * characters. The controller refuses such names on CreateTopics; the broker's handlers answer
 * INVALID_TOPIC_EXCEPTION for them without asking it.
 */
import { ErrorCode } from '../protocol/generated/errors.js';
import type { ApiResult } from './cluster-metadata.js';

/** Kafka's internal topics (Topic.INTERNAL_TOPICS): created with the internal flag, records never deleted by clients. */
const INTERNAL_TOPICS: ReadonlySet<string> = new Set([
  '__consumer_offsets',
  '__transaction_state',
  '__share_group_state',
]);

export function isInternalTopic(name: string): boolean {
  return INTERNAL_TOPICS.has(name);
}

/** Kafka's limit on topic name length (Topic.MAX_NAME_LENGTH). */
const MAX_TOPIC_NAME = 249;

const OK: ApiResult = { errorCode: ErrorCode.NONE, errorMessage: null };

function invalid(errorMessage: string): ApiResult {
  return { errorCode: ErrorCode.INVALID_TOPIC_EXCEPTION, errorMessage };
}

export function validateTopicName(name: string): ApiResult {
  if (name.length === 0) return invalid("Topic name is illegal, it can't be empty");
  if (name === '.' || name === '..') return invalid('Topic name cannot be "." or ".."');
  if (name.length > MAX_TOPIC_NAME) {
    return invalid(
      `Topic name is illegal, it can't be longer than ${MAX_TOPIC_NAME} characters, topic name: ${name}`,
    );
  }
  if (!/^[a-zA-Z0-9._-]+$/.test(name)) {
    return invalid(
      `Topic name "${name}" is illegal, it contains a character other than ASCII alphanumerics, '.', '_' and '-'`,
    );
  }
  return OK;
}
