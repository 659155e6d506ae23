import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ApiVersionsRequestCodec } from '../../src/protocol/generated/ApiVersionsRequest.js';
import {
  ApiVersionsResponseCodec,
  defaultApiVersionsResponse,
} from '../../src/protocol/generated/ApiVersionsResponse.js';
import {
  defaultFetchableTopicResponse,
  defaultFetchResponse,
  defaultPartitionData,
  FetchResponseCodec,
} from '../../src/protocol/generated/FetchResponse.js';
import {
  API_MESSAGES,
  requestHeaderVersion,
  responseHeaderVersion,
} from '../../src/protocol/generated/index.js';
import {
  defaultMetadataRequest,
  MetadataRequestCodec,
} from '../../src/protocol/generated/MetadataRequest.js';
import { encodeRequest, encodeResponse, readRequest, readResponse } from '../../src/protocol/messages.js';
import { ProtocolError } from '../../src/protocol/protocol-error.js';

const body = (chunks: Buffer[]) => Buffer.concat(chunks).subarray(4);

describe('request and response frames', () => {
  it('choose header versions as Kafka does', () => {
    assert.equal(requestHeaderVersion(3, 8), 1);
    assert.equal(requestHeaderVersion(3, 9), 2);
    assert.equal(requestHeaderVersion(7, 0), 0); // ControlledShutdown v0
    assert.equal(responseHeaderVersion(3, 9), 1);
    assert.equal(responseHeaderVersion(3, 8), 0);
    assert.equal(responseHeaderVersion(18, 3), 0); // ApiVersions: always v0
    assert.equal(requestHeaderVersion(18, 3), 2);
    // A version newer than we know is still read with the flexible header (the ApiVersions fallback).
    assert.equal(requestHeaderVersion(18, 99), 2);
  });

  it('the registry has every API with both halves', () => {
    assert.ok(API_MESSAGES.size >= 85);
    assert.equal(API_MESSAGES.get(0)?.name, 'Produce');
    assert.equal(API_MESSAGES.get(1)?.name, 'Fetch');
    assert.equal(API_MESSAGES.get(18)?.response, ApiVersionsResponseCodec);
  });

  it('a request round-trips through the frame, size prefix included', () => {
    const req = { ...defaultMetadataRequest(), topics: null, allowAutoTopicCreation: false };
    const header = { requestApiKey: 3, requestApiVersion: 12, correlationId: 42, clientId: 'skiff-test' };
    const chunks = encodeRequest(header, MetadataRequestCodec, req);
    const whole = Buffer.concat(chunks);
    assert.equal(whole.readInt32BE(0), whole.length - 4);
    const incoming = readRequest(whole.subarray(4));
    assert.deepStrictEqual(incoming.header, header);
    assert.equal(incoming.headerVersion, 2);
    assert.deepStrictEqual(MetadataRequestCodec.decode(incoming.body, 12), req);
  });

  it('an ApiVersions v3 response carries header v0 (no tagged fields after the correlation id)', () => {
    const res = { ...defaultApiVersionsResponse(), apiKeys: [{ apiKey: 18, minVersion: 0, maxVersion: 4 }] };
    const frame = body(encodeResponse(7, 18, 3, ApiVersionsResponseCodec, res));
    assert.equal(frame.readInt32BE(0), 7);
    assert.equal(frame.readInt16BE(4), 0); // error code follows the correlation id directly
    assert.deepStrictEqual(readResponse(frame, 18, 3, ApiVersionsResponseCodec), {
      correlationId: 7,
      body: res,
    });
  });

  it('refuses trailing bytes after a response and frames too short for a header', () => {
    const frame = body(encodeResponse(1, 18, 0, ApiVersionsResponseCodec, defaultApiVersionsResponse()));
    assert.throws(
      () => readResponse(Buffer.concat([frame, Buffer.from([0])]), 18, 0, ApiVersionsResponseCodec),
      /1 bytes after/,
    );
    assert.throws(() => readRequest(Buffer.alloc(5)), ProtocolError);
    const v0 = encodeRequest(
      { requestApiKey: 18, requestApiVersion: 0, correlationId: 1, clientId: null },
      ApiVersionsRequestCodec,
      ApiVersionsRequestCodec.defaults(),
    );
    assert.equal(readRequest(body(v0)).header.clientId, null);
  });

  it('a Fetch response references stored batches instead of copying them', () => {
    const stored = Buffer.alloc(1024 * 1024, 3);
    const partitions = [0, 1].map((p) => ({ ...defaultPartitionData(), partitionIndex: p, records: stored }));
    const res = {
      ...defaultFetchResponse(),
      responses: [{ ...defaultFetchableTopicResponse(), topic: 't', partitions }],
    };
    const chunks = encodeResponse(9, 1, 12, FetchResponseCodec, res);
    assert.equal(chunks.filter((c) => c === stored).length, 2);
    assert.deepStrictEqual(readResponse(body(chunks), 1, 12, FetchResponseCodec).body, res);
  });
});
