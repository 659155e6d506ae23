#!/usr/bin/env bash
# The one command that passes every test on a fresh Debian machine (README, .ci/run):
# installs the Debian packages the tests use when they are missing, installs the npm
# dependencies, then runs lint and the whole node:test suite.
set -euo pipefail
cd "$(dirname "$0")/.."

need=()
command -v kcat >/dev/null 2>&1 || need+=(kcat)
command -v etcd >/dev/null 2>&1 || need+=(etcd-server)
/usr/bin/python3 -c 'import kafka' >/dev/null 2>&1 || need+=(python3-kafka)
/usr/bin/python3 -c 'import confluent_kafka' >/dev/null 2>&1 || need+=(python3-confluent-kafka)
if [ ${#need[@]} -gt 0 ]; then
  echo "test-all: installing Debian packages: ${need[*]}"
  SUDO=""; [ "$(id -u)" -eq 0 ] || SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi

npm ci --no-audit --no-fund
npm run lint
npm test
