#!/usr/bin/env bash
# The node:test suite over the compiled tests in dist/test (npm test runs it after the build;
# scripts/test-all.sh runs it under each Node.js line). Arguments: path prefixes under dist/test/
# to leave out (scripts/test-all.sh's MAIN_ONLY_TESTS for the other lines).
#
# Two test files at a time: node --test's default is one per core less one, a single file on a
# 2-core machine, and most files spend their time waiting on brokers, etcd and clients rather than
# computing. The seed replays in scenarios/ run after the rest, one at a time: their checks measure
# replication rates against throttles and catch-up against the replica lag bound, which another
# file's load beside them would disturb.
set -euo pipefail
cd "$(dirname "$0")/.."
SERIAL=(scenarios/)
parallel=()
serial=()
while IFS= read -r file; do
  for skip in "$@"; do
    [[ "$file" == "dist/test/$skip"* ]] && continue 2
  done
  for s in "${SERIAL[@]}"; do
    if [[ "$file" == "dist/test/$s"* ]]; then
      serial+=("$file")
      continue 2
    fi
  done
  parallel+=("$file")
done < <(find dist/test -name '*.test.js' | sort)
# No file can hold the suite: a file's process still running a minute after its tests ended fails,
# naming what it left open (test/support/leak-guard.ts), and a test that never ends fails after 10
# minutes (the longest seed replay takes about 2).
GUARDS=(--import ./dist/test/support/leak-guard.js --test-timeout=600000)
status=0
# spec, as node --test's default on a terminal (22 prints TAP when stdout is not one).
node --test --test-reporter=spec "${GUARDS[@]}" --test-concurrency=2 "${parallel[@]}" || status=1
if [ ${#serial[@]} -gt 0 ]; then
  node --test --test-reporter=spec "${GUARDS[@]}" --test-concurrency=1 "${serial[@]}" || status=1
fi
exit $status
