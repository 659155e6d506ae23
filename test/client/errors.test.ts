/** The Java exception class names Kafka's tools print for an error code. */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kafkaExceptionClass } from '../../src/client/errors.js';

describe('kafkaExceptionClass', () => {
  it("names Errors.java's class: the error's name in camel case, or the irregular ones by hand", () => {
    const cases: [number, string][] = [
      [-1, 'UnknownServerException'],
      [3, 'UnknownTopicOrPartitionException'],
      [56, 'KafkaStorageException'],
      [57, 'LogDirNotFoundException'],
      [80, 'PreferredLeaderNotAvailableException'],
      [83, 'EligibleLeadersNotAvailableException'],
      [17, 'InvalidTopicException'],
      [7, 'TimeoutException'],
      [36, 'TopicExistsException'],
      [12, 'OffsetMetadataTooLarge'],
    ];
    for (const [code, name] of cases)
      assert.equal(kafkaExceptionClass(code), `org.apache.kafka.common.errors.${name}`, String(code));
  });
});
