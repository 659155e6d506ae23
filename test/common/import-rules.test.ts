/**
 * The import rules hold over the whole of src/ (test/support/import-graph.ts), and the check
 * notices a forbidden import when one is added.
 */
import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { importsOf, importViolations, readSources } from '../support/import-graph.js';
import { REPO_ROOT } from '../support/protocol-specs.js';

describe('import rules', () => {
  const sources = readSources(`${REPO_ROOT}/src`);

  it('hold for every file under src/', () => {
    assert.ok(sources.size > 100, `${sources.size} source files read`);
    const found = importViolations(sources).map(
      (v) => `${v.file}: ${v.fromLayer} may not import ${v.toLayer} ('${v.specifier}')`,
    );
    assert.deepEqual(found, []);
  });

  it('fail when a forbidden import is added', () => {
    const withBad = new Map(sources);
    const log = withBad.get('storage/log.ts')!;
    withBad.set('storage/log.ts', `import { Broker } from '../broker/broker.js';\n${log}`);
    withBad.set(
      'controller/extra.ts',
      "import type { Log } from '../storage/log.js';\nexport { Follower } from '../replication/follower.js';\n",
    );
    withBad.set(
      'replication/net.ts',
      "import { ClientConnection } from '../network/client-connection.js';\n",
    );
    withBad.set('broker/cli-use.ts', "import { runCli } from '../cli/cli.js';\n");
    withBad.set('unplaced/page.ts', "import { clock } from '../common/clock.js';\n");
    assert.deepEqual(
      importViolations(withBad).map((v) => [v.file, v.toLayer]),
      [
        ['storage/log.ts', 'broker'],
        ['controller/extra.ts', 'storage'],
        ['controller/extra.ts', 'replication'],
        ['replication/net.ts', 'network'],
        ['broker/cli-use.ts', 'cli'],
        ['unplaced/page.ts', 'common'],
      ],
    );
  });

  it('reads imports, re-exports and side-effect imports, multi-line ones included', () => {
    const source = [
      "import assert from 'node:assert';",
      'import {',
      '  a,',
      '  type B,',
      "} from '../x/a.js';",
      "export { c } from './c.js';",
      "import '../y/side.js';",
      'const s = \'not an import from "../z/q.js"\';',
    ].join('\n');
    assert.deepEqual(importsOf(source), ['../x/a.js', './c.js', '../y/side.js']);
  });
});
