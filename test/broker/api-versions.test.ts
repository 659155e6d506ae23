/**
 * ApiVersions against Kafka 4's: every API a broker lists has the range a Kafka 4.0 broker lists,
 * but for the differences KAFKA_4_DIFFERENCES documents (docs/compatibility.md renders them), and
 * the versions Kafka 4 removed (KIP-896) close the connection as Kafka's broker does.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import { KAFKA_4_DIFFERENCES } from '../../src/broker/api-versions.js';
import type { ClientConnection } from '../../src/network/client-connection.js';
import type { ApiVersionsResponse } from '../../src/protocol/generated/ApiVersionsResponse.js';
import { API_MESSAGES, ApiKey } from '../../src/protocol/generated/index.js';
import { startBroker, type TestBroker } from './helpers.js';

/**
 * What a Kafka 4.0 broker answers to ApiVersions (unstable versions not enabled, the default):
 * API key → [min, max], as kafka-python recorded it from a 4.0 broker
 * (kafka/protocol/broker_api_versions.py). The message specs' validVersions after KIP-896's
 * removals, Produce listed from 0 (KAFKA-18659); controller-only APIs are absent.
 */
const KAFKA_4_0: ReadonlyMap<number, readonly [number, number]> = new Map([
  [0, [0, 12]],
  [1, [4, 17]],
  [2, [1, 10]],
  [3, [0, 13]],
  [8, [2, 9]],
  [9, [1, 9]],
  [10, [0, 6]],
  [11, [2, 9]],
  [12, [0, 4]],
  [13, [0, 5]],
  [14, [0, 5]],
  [15, [0, 6]],
  [16, [0, 5]],
  [17, [0, 1]],
  [18, [0, 4]],
  [19, [2, 7]],
  [20, [1, 6]],
  [21, [0, 2]],
  [22, [0, 5]],
  [23, [2, 4]],
  [24, [0, 5]],
  [25, [0, 4]],
  [26, [0, 5]],
  [27, [1, 1]],
  [28, [0, 5]],
  [29, [1, 3]],
  [30, [1, 3]],
  [31, [1, 3]],
  [32, [1, 4]],
  [33, [0, 2]],
  [34, [1, 2]],
  [35, [1, 4]],
  [36, [0, 2]],
  [37, [0, 3]],
  [38, [1, 3]],
  [39, [1, 2]],
  [40, [1, 2]],
  [41, [1, 3]],
  [42, [0, 2]],
  [43, [0, 2]],
  [44, [0, 1]],
  [45, [0, 0]],
  [46, [0, 0]],
  [47, [0, 0]],
  [48, [0, 1]],
  [49, [0, 1]],
  [50, [0, 0]],
  [51, [0, 0]],
  [55, [0, 2]],
  [57, [0, 2]],
  [60, [0, 2]],
  [61, [0, 0]],
  [64, [0, 0]],
  [65, [0, 0]],
  [66, [0, 1]],
  [68, [0, 1]],
  [69, [0, 1]],
  [74, [0, 0]],
  [75, [0, 0]],
  [80, [0, 0]],
  [81, [0, 0]],
]);

const name = (key: number) => API_MESSAGES.get(key)?.name ?? `API ${key}`;

describe("ApiVersions: Kafka 4.0's ranges, and the documented differences", () => {
  let b: TestBroker;
  let conn: ClientConnection;
  before(async () => {
    b = await startBroker();
    conn = await b.connect();
  });
  after(async () => {
    await b.stop();
  });

  it("every API listed has Kafka 4.0's range, or a documented difference that still holds", async () => {
    const r = await b.call<ApiVersionsResponse>(conn, ApiKey.ApiVersions, 3, {
      clientSoftwareName: 'test',
      clientSoftwareVersion: '1',
    });
    assert.equal(r.errorCode, 0);
    const listed = new Map(r.apiKeys.map((k) => [k.apiKey, { min: k.minVersion, max: k.maxVersion }]));
    let compared = 0;
    for (const [key, range] of listed) {
      // Skiff's own admin API, outside Kafka's key space.
      if (key === ApiKey.SkiffDescribeReplication) continue;
      const kafka = KAFKA_4_0.get(key);
      assert.ok(kafka, `${name(key)} is listed, and a Kafka 4.0 broker does not list it`);
      const kafkaRange = { min: kafka[0], max: kafka[1] };
      const documented = KAFKA_4_DIFFERENCES.get(key);
      if (documented) {
        assert.deepEqual(documented.kafka, kafkaRange, `KAFKA_4_DIFFERENCES misstates Kafka's ${name(key)}`);
        assert.notDeepEqual(
          range,
          kafkaRange,
          `${name(key)} is Kafka's now: drop it from KAFKA_4_DIFFERENCES`,
        );
      } else {
        assert.deepEqual(range, kafkaRange, `${name(key)}: Skiff lists ${range.min}-${range.max}`);
      }
      compared++;
    }
    assert.equal(compared, listed.size - 1);
    for (const key of KAFKA_4_DIFFERENCES.keys())
      assert.ok(listed.has(key), `KAFKA_4_DIFFERENCES documents ${name(key)}, which is not listed`);
  });

  for (const [key, version] of [
    [ApiKey.CreateTopics, 1],
    [ApiKey.DeleteTopics, 0],
    [ApiKey.OffsetForLeaderEpoch, 1],
    [ApiKey.DescribeAcls, 0],
    [ApiKey.DescribeConfigs, 0],
    [ApiKey.DescribeLogDirs, 0],
    [ApiKey.ListOffsets, 0],
  ] as const) {
    it(`${name(key)} v${version}, removed in Kafka 4 (KIP-896), closes the connection`, async () => {
      const c = await b.connect();
      const closed = c.closed();
      const codecs = API_MESSAGES.get(key)!;
      await c.sendOneWay(key, version, codecs.request, codecs.request.defaults());
      await closed;
      assert.ok(b.logger.lines.some((l) => l.includes(`unsupported version ${version} of ${name(key)}`)));
    });
  }
});
