import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import type { MessageCodec } from '../../src/protocol/codec-runtime.js';
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
import { RequestHeaderCodec } from '../../src/protocol/generated/RequestHeader.js';
import { ResponseHeaderCodec } from '../../src/protocol/generated/ResponseHeader.js';
import { encodeRequest, encodeResponse, readResponse } from '../../src/protocol/messages.js';
import { ProtocolError } from '../../src/protocol/protocol-error.js';
import { readRequest } from '../../src/protocol/request-frame.js';
import { Writer } from '../../src/protocol/writer.js';

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

  it('frames take the header version from the codec, as the registry would choose it', () => {
    // The frame as the registry's header versions make it: header, then the body.
    const expected = (encodeHeader: (w: Writer) => void, codec: MessageCodec<unknown>, v: number) => {
      const w = new Writer();
      encodeHeader(w);
      codec.encode(w, codec.defaults(), v);
      return Buffer.concat(w.chunksView()).toString('hex');
    };
    for (const api of API_MESSAGES.values()) {
      const { request, response } = api;
      for (let v = request.minVersion; v <= request.maxVersion; v++) {
        const header = { requestApiKey: api.apiKey, requestApiVersion: v, correlationId: 5, clientId: 'c' };
        const hv = requestHeaderVersion(api.apiKey, v);
        assert.equal(
          body(encodeRequest(header, request, request.defaults())).toString('hex'),
          expected((w) => RequestHeaderCodec.encode(w, header, hv), request, v),
          `${api.name} v${v} request`,
        );
      }
      for (let v = response.minVersion; v <= response.maxVersion; v++) {
        const hv = responseHeaderVersion(api.apiKey, v);
        assert.equal(
          body(encodeResponse(5, api.apiKey, v, response, response.defaults())).toString('hex'),
          expected((w) => ResponseHeaderCodec.encode(w, { correlationId: 5 }, hv), response, v),
          `${api.name} v${v} response`,
        );
      }
    }
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
