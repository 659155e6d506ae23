/**
 * Kafka's tables have one source each: error codes come from the generated ErrorCode, API keys
 * from the generated ApiKey. A hand-written copy of either in src/ fails here.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { ErrorCode } from '../../src/protocol/generated/errors.js';
import { readSources } from '../support/import-graph.js';
import { REPO_ROOT } from '../support/protocol-specs.js';

/** `const NOT_LEADER_OR_FOLLOWER = 6;` where the name and number are Kafka's: a copy of ErrorCode. */
function handWrittenErrorCodes(files: ReadonlyMap<string, string>): string[] {
  const codes = new Map<string, number>(Object.entries(ErrorCode));
  const out: string[] = [];
  for (const [file, source] of files) {
    if (file.startsWith('protocol/generated/')) continue;
    for (const m of source.matchAll(/\bconst ([A-Z][A-Z0-9_]*) = (-?\d+)\b/g)) {
      if (codes.get(m[1]!) === Number(m[2])) out.push(`${file}: ${m[0]}`);
    }
    for (const m of source.matchAll(/\bfromCode\(\s*-?\d+(?=\s*,)/g)) out.push(`${file}: ${m[0]}`);
    if (/\bconst ApiKey\s*=/.test(source)) out.push(`${file}: a copy of ApiKey`);
  }
  return out;
}

describe("Kafka's tables", () => {
  it('error codes and API keys are never written by hand in src/', () => {
    assert.deepEqual(handWrittenErrorCodes(readSources(`${REPO_ROOT}/src`)), []);
  });

  it('the check names each kind of copy', () => {
    const files = new Map([
      ['broker/x.ts', 'const NOT_LEADER_OR_FOLLOWER = 6;\nconst RETRIES = 6;\n'],
      ['storage/y.ts', "throw KafkaError.fromCode(1, 'out of range');\n"],
      ['client/z.ts', 'export const ApiKey = { Produce: 0 };\n'],
      ['protocol/generated/errors.ts', 'const NONE = 0;\n'],
    ]);
    assert.deepEqual(handWrittenErrorCodes(files), [
      'broker/x.ts: const NOT_LEADER_OR_FOLLOWER = 6',
      'storage/y.ts: fromCode(1',
      'client/z.ts: a copy of ApiKey',
    ]);
  });
});
