/** The V8 flags `skiff up` gives its broker processes: a 64 MiB young generation unless the launcher's own flags set one. */
import assert from 'node:assert/strict';
import { it } from 'node:test';
import { brokerExecArgv } from '../../src/cluster/launcher.js';

it("adds --max-semi-space-size=64 before the launcher's flags, unless they set it", () => {
  assert.deepEqual(brokerExecArgv([]), ['--max-semi-space-size=64']);
  assert.deepEqual(brokerExecArgv(['--cpu-prof', '--cpu-prof-dir=/tmp/p']), [
    '--max-semi-space-size=64',
    '--cpu-prof',
    '--cpu-prof-dir=/tmp/p',
  ]);
  assert.deepEqual(brokerExecArgv(['--max-semi-space-size=8']), ['--max-semi-space-size=8']);
  assert.deepEqual(brokerExecArgv(['--max-semi-space-size', '8']), ['--max-semi-space-size', '8']);
});
