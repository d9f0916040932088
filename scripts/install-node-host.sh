#!/usr/bin/env bash
# Installs the Debian packages that the image build, the node and the local registries need
# (docs/node.md), and Prometheus for the monitoring tests (promtool and a real server;
# docs/monitoring.md). Idempotent; needs root and Debian 12 (bookworm). Run by .ci/run before the
# test suite; developers run it once.
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
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi
echo "install-node-host: ${#missing[@]} package(s) installed${missing[*]:+: ${missing[*]}}"
