/**
 * java.util.HashMap's iteration order, and the client-quota answers Kafka orders by it: entity
 * components (client-id before user), an entity's quota values (the image's HashMap, rebuilt at
 * each change from the previous order), entities by ClientQuotaEntity.hashCode.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { kafkaEntityHash, kafkaEntityOrder, kafkaQuotaValueOrder } from '../../src/metadata/client-quotas.js';
import {
  javaHashMapCapacity,
  javaHashMapOrder,
  javaStringHash,
  javaStringMapHash,
} from '../../src/metadata/java-hash-map.js';

const P = 'producer_byte_rate';
const C = 'consumer_byte_rate';
const R = 'request_percentage';
const M = 'controller_mutation_rate';

describe('java.util.HashMap order', () => {
  it("String.hashCode as Java's (signed, wrapping, UTF-16 units)", () => {
    assert.equal(javaStringHash(''), 0);
    assert.equal(javaStringHash('hello'), 99162322);
    assert.equal(javaStringHash('user'), 3599307);
    assert.equal(javaStringHash('client-id'), -1904137635);
    assert.equal(javaStringHash('producer_byte_rate'), -832502454);
    assert.equal(javaStringHash('é😀'), ((0xe9 * 31 + 0xd83d) * 31 + 0xde00) | 0);
    assert.equal(javaStringMapHash([['user', null]]), 3599307);
    assert.equal(javaStringMapHash([['a', 'b']]), 97 ^ 98);
  });

  it('table sizes: 16 by default, the next power of two of the initial capacity, doubled past 3/4 full', () => {
    assert.equal(javaHashMapCapacity(undefined, 0), 16);
    assert.equal(javaHashMapCapacity(undefined, 12), 16);
    assert.equal(javaHashMapCapacity(undefined, 13), 32);
    assert.equal(javaHashMapCapacity(0, 1), 2);
    assert.equal(javaHashMapCapacity(1, 1), 2);
    assert.equal(javaHashMapCapacity(2, 2), 4);
    assert.equal(javaHashMapCapacity(3, 3), 4);
    assert.equal(javaHashMapCapacity(4, 4), 8);
    assert.equal(javaHashMapCapacity(4, 1), 4);
    assert.equal(javaHashMapCapacity(5, 6), 8);
    assert.equal(javaHashMapCapacity(5, 7), 16);
  });

  it('iterates bucket by bucket, a shared bucket in insertion order', () => {
    // At 4 buckets producer_byte_rate and request_percentage share bucket 3; at 8 they do not.
    assert.deepEqual(javaHashMapOrder([P, R, C], javaStringHash, 4), [C, P, R]);
    assert.deepEqual(javaHashMapOrder([R, P, C], javaStringHash, 4), [C, R, P]);
    assert.deepEqual(javaHashMapOrder([R, M, C, P], javaStringHash, 8), [P, C, M, R]);
    assert.deepEqual(javaHashMapOrder([P, C, M, R], javaStringHash, 16), [R, P, C, M]);
  });
});

describe("Kafka's client-quota orders", () => {
  it('entity components: client-id before user, whatever the request order', () => {
    const user = { entityType: 'user', entityName: 'alice' };
    const client = { entityType: 'client-id', entityName: null };
    for (const cap of [undefined, 2]) {
      assert.deepEqual(kafkaEntityOrder([user, client], cap), [client, user]);
      assert.deepEqual(kafkaEntityOrder([client, user], cap), [client, user]);
    }
    assert.equal(kafkaEntityHash([user]), (31 + (javaStringHash('user') ^ javaStringHash('alice'))) | 0);
  });

  it('a new entity: consumer_byte_rate, request_percentage, producer_byte_rate (the issue), four keys in table-of-8 order', () => {
    for (const sent of [
      [P, C, R],
      [R, C, P],
      [C, P, R],
    ]) {
      assert.deepEqual(kafkaQuotaValueOrder([], sent, sent), [C, R, P]);
    }
    assert.deepEqual(kafkaQuotaValueOrder([], [M, R, C, P], [M, R, C, P]), [P, C, M, R]);
    assert.deepEqual(kafkaQuotaValueOrder([], [P, M], [P, M]), [M, P]);
  });

  it('values added later keep the order of the image before them; a removal rebuilds from that order', () => {
    let order = kafkaQuotaValueOrder([], [P], [P]);
    order = kafkaQuotaValueOrder(order, [P, R], [R]);
    assert.deepEqual(order, [P, R], 'producer_byte_rate was put first, they share a bucket');
    order = kafkaQuotaValueOrder(order, [P, R, C], [C]);
    assert.deepEqual(order, [C, P, R]);
    order = kafkaQuotaValueOrder(order, [P, R, C, M], [M]);
    assert.deepEqual(order, [P, C, M, R]);
    order = kafkaQuotaValueOrder(order, [P, R, M], [C]);
    assert.deepEqual(order, [M, P, R]);
    // A value changed in place keeps its slot; an unchanged entity keeps its order.
    assert.deepEqual(kafkaQuotaValueOrder([P, R], [P, R], [P]), [P, R]);
  });
});
