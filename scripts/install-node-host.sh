#!/usr/bin/env bash
# Installs the Debian packages that the image build, the node and the local registries need
# (docs/node.md), and Prometheus for the monitoring tests (promtool and a real server;
# docs/monitoring.md). Idempotent; needs root and Debian 12 (bookworm). `npm test`
# (scripts/run-tests.mjs) runs it when a package is missing and it can (root, or sudo without a
# password); developers without either run it once.
#
# --check: installs nothing and needs no root; prints the missing packages, one a line (nothing
# when all are there), and exits 3 on a host without dpkg (not Debian).
set -euo pipefail
packages=(
  mmdebstrap umoci            # the image (scripts/build-image.sh)
  containerd runc             # the node's container runtime
  containernetworking-plugins # CNI bridge, host-local, loopback
  iproute2                    # the node's bridge and addresses
  docker-registry apache2-utils skopeo # the local registries (htpasswd) and pushing to them
  gcc libc6-dev               # the pause image (compiled -static from the Kubernetes module)
  prometheus                  # promtool check/test rules and the scrape test (tests run their own server)
)
if ! command -v dpkg-query >/dev/null 2>&1; then
  echo "install-node-host: no dpkg-query here: the packages are Debian 12's" >&2
  exit 3
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ "${1:-}" = --check ]; then
  [ ${#missing[@]} -eq 0 ] || printf '%s\n' "${missing[@]}"
  exit 0
fi
if [ ${#missing[@]} -gt 0 ]; then
  echo "install-node-host: installing ${missing[*]} (apt-get)"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-node-host: ${#missing[@]} package(s) installed${missing[*]:+: ${missing[*]}}"
