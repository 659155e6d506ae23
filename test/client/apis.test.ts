import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { type Api, Apis, lazyApi } from '../../src/client/apis.js';
import * as quotas from '../../src/client/quota-admin.js';
import * as reassign from '../../src/client/reassign-apis.js';
import * as skiff from '../../src/client/skiff-admin.js';
import { MetadataRequestCodec } from '../../src/protocol/generated/MetadataRequest.js';
import { MetadataResponseCodec } from '../../src/protocol/generated/MetadataResponse.js';

const isApi = (v: unknown): v is Api<unknown, unknown> =>
  typeof v === 'object' && v !== null && 'codecs' in v && 'key' in v;

const ALL = [Apis, reassign, quotas, skiff].flatMap((m) => Object.values(m).filter(isApi));

describe('the APIs the client sends', () => {
  it("each imports its own API's codecs, which cover the versions the client sends", async () => {
    assert.ok(ALL.length >= 25);
    for (const api of ALL) {
      const { request, response } = await api.codecs();
      assert.equal(request.name, `${api.name}Request`);
      assert.equal(response.name, `${api.name}Response`);
      assert.equal(request.apiKey, api.key, api.name);
      assert.ok(api.min >= request.minVersion && api.max <= request.maxVersion, api.name);
      assert.ok(api.min >= response.minVersion && api.max <= response.maxVersion, api.name);
      assert.equal(await api.codecs(), await api.codecs(), 'imported once');
    }
  });

  it('an API whose codecs are of another key fails its first request', async () => {
    const wrong = lazyApi(4, 'Metadata', 1, 12, async () => ({
      request: MetadataRequestCodec,
      response: MetadataResponseCodec,
    }));
    await assert.rejects(wrong.codecs(), /Metadata: codecs of API keys 3\/3, not 4/);
  });
});
