#!/usr/bin/env bash
# Builds the OCI image of rtb without pulling any base image: a root filesystem made by
# mmdebstrap from Debian packages (Node.js from trixie: bookworm's 18 is below package.json's
# engines) plus the compiled project and its production dependencies, committed as two layers
# with umoci. Output: an OCI image layout (docs/image.md says why each choice).
#
#   scripts/build-image.sh --out DIR [--rootfs-cache DIR] [--tag TAG]
#   scripts/build-image.sh --print-reference   # the release reference it names the image as
#
# Needs root (mmdebstrap's root mode keeps file ownership), mmdebstrap, umoci, npm and the
# project's dev dependencies (tsc); for the FIPS provider (scripts/build-fips-provider.sh) a C
# compiler, make, perl, gpgv and curl. Writes nothing outside --out, --rootfs-cache and a temp dir.
set -euo pipefail

# Pins. The Debian suite and package set are fixed here; the mirror serves only the current
# point release of a suite, so exact Debian versions cannot be pinned without a snapshot
# mirror: they are recorded in the image instead, and NODE_RANGE is checked.
SUITE=trixie
MIRROR=${RTB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
PACKAGES=nodejs
NODE_MAJOR=20
NODE_MIN_MINOR=19
MMDEBSTRAP_VERSION=1.3.5
UMOCI_VERSION=0.4.7
UID_NONROOT=65532
# OpenSSL's configuration that activates the FIPS provider (src/process/fips-mode.ts names it too).
FIPS_OPENSSL_CONF=/usr/lib/ssl/rtb-fips.cnf

root=$(cd "$(dirname "$0")/.." && pwd)
out=''
rootfs_cache=''
tag=''
print_reference=0
while [ $# -gt 0 ]; do
  case "$1" in
    --out) out=$2; shift 2 ;;
    --rootfs-cache) rootfs_cache=$2; shift 2 ;;
    --tag) tag=$2; shift 2 ;;
    --print-reference) print_reference=1; shift ;;
    *) echo "build-image: unknown argument $1" >&2; exit 2 ;;
  esac
done
name=$(node -p 'require(process.argv[1]).name' "$root/package.json")
version=$(node -p 'require(process.argv[1]).version' "$root/package.json")
repository=$(node -p 'require(process.argv[1]).config?.imageRepository ?? ""' "$root/package.json")
tag=${tag:-$version}
# The reference a release of this build is pushed as (src/version.ts releaseImage: what
# `rtb render` and direct mode default to); local registries serve it as <host>/$name:$tag.
reference="${repository:+$repository/}$name:$tag"
if [ "$print_reference" = 1 ]; then echo "$reference"; exit 0; fi
[ -n "$out" ] || { echo 'build-image: --out DIR is required' >&2; exit 2; }

need() {
  command -v "$1" >/dev/null || {
    echo "build-image: $1 is missing: apt-get install $2 (scripts/install-node-host.sh installs all)" >&2
    exit 3
  }
}
need mmdebstrap mmdebstrap
need umoci umoci
need npm nodejs
[ "$(id -u)" = 0 ] || { echo 'build-image: run as root (mmdebstrap root mode)' >&2; exit 3; }
check_version() { # tool, wanted, actual
  case "$3" in "$2"*) ;; *) echo "build-image: warning: $1 $3, written for $2" >&2 ;; esac
}
check_version mmdebstrap "$MMDEBSTRAP_VERSION" "$(mmdebstrap --version | awk '{print $2}')"
check_version umoci "$UMOCI_VERSION" "$(umoci --version | awk '{print $3}')"

work=$(mktemp -d /tmp/rtb-image-XXXXXX)
trap 'rm -rf "$work"' EXIT
started=$(date +%s)
step() { echo "build-image: [$(($(date +%s) - started)) s] $*" >&2; }

# 1. The Debian root filesystem, cached by suite and package set (a minute and ~40 MB of download).
key=$(printf '%s\n' "$SUITE" "$PACKAGES" "$MIRROR" | sha256sum | cut -c1-12)
rootfs_tar=${rootfs_cache:-$work}/debian-$SUITE-$key.tar
if [ ! -s "$rootfs_tar" ]; then
  step "mmdebstrap $SUITE ($PACKAGES)"
  mkdir -p "$(dirname "$rootfs_tar")"
  # extract: unpack the packages and their dependencies, run no maintainer script, so no shell
  # or dpkg lands in the image. The hook records the exact versions that went in.
  mmdebstrap --quiet --format=tar --variant=extract --include="$PACKAGES" \
    --aptopt='Apt::Install-Recommends "false"' \
    --extract-hook='mkdir -p "$1/usr/share/rtb" && for d in "$1"/var/cache/apt/archives/*.deb; do dpkg-deb --showformat='"'"'${Package}=${Version}\n'"'"' -W "$d"; done | sort > "$1/usr/share/rtb/debian-packages.txt"' \
    "$SUITE" "$rootfs_tar.tmp" "$MIRROR"
  mv "$rootfs_tar.tmp" "$rootfs_tar"
fi

step 'trimming the root filesystem'
rootfs=$work/rootfs
mkdir -p "$rootfs"
tar -C "$rootfs" -xf "$rootfs_tar"
# What Node does not use at run time: package manager state, docs, iconv modules, ICU tools,
# corepack and type declarations. Debian's node loads undici, acorn and cjs-module-lexer from
# /usr/share/nodejs, so those stay.
rm -rf "$rootfs"/etc/apt "$rootfs"/etc/dpkg "$rootfs"/var/lib/apt "$rootfs"/var/lib/dpkg \
  "$rootfs"/var/cache "$rootfs"/var/log "$rootfs"/usr/share/doc "$rootfs"/usr/share/man \
  "$rootfs"/usr/share/lintian "$rootfs"/usr/share/gdb "$rootfs"/usr/share/bash-completion \
  "$rootfs"/usr/share/gcc "$rootfs"/usr/lib/x86_64-linux-gnu/gconv \
  "$rootfs"/usr/lib/x86_64-linux-gnu/libicutest.so* "$rootfs"/usr/lib/x86_64-linux-gnu/libicutu.so* \
  "$rootfs"/usr/share/nodejs/corepack "$rootfs"/usr/bin/corepack \
  "$rootfs"/usr/share/nodejs/@types "$rootfs"/usr/share/nodejs/undici-types \
  "$rootfs"/etc/hostname "$rootfs"/etc/resolv.conf "$rootfs"/etc/fstab
# Merged /usr: base-files would make these links, but the extract variant installs nothing.
for d in bin lib lib64 sbin; do
  [ -e "$rootfs/usr/$d" ] || mkdir -p "$rootfs/usr/$d"
  ln -sfn "usr/$d" "$rootfs/$d"
done
mkdir -p "$rootfs"/etc "$rootfs"/tmp "$rootfs/home/nonroot" "$rootfs"/var/run
chmod 1777 "$rootfs"/tmp
chown "$UID_NONROOT:$UID_NONROOT" "$rootfs/home/nonroot"
printf 'root:x:0:0:root:/root:/usr/sbin/nologin\nnonroot:x:%s:%s:nonroot:/home/nonroot:/usr/sbin/nologin\n' \
  "$UID_NONROOT" "$UID_NONROOT" >"$rootfs/etc/passwd"
printf 'root:x:0:\nnonroot:x:%s:\n' "$UID_NONROOT" >"$rootfs/etc/group"
printf 'hosts: files dns\n' >"$rootfs/etc/nsswitch.conf"

node_version=$(NODE_EXTRA_CA_CERTS='' chroot "$rootfs" /usr/bin/node -p 'process.versions.node')
case "$node_version" in
  "$NODE_MAJOR".*) minor=$(echo "$node_version" | cut -d. -f2)
    [ "$minor" -ge "$NODE_MIN_MINOR" ] || { echo "build-image: node $node_version < $NODE_MAJOR.$NODE_MIN_MINOR" >&2; exit 4; } ;;
  *) echo "build-image: node $node_version is not $NODE_MAJOR.x" >&2; exit 4 ;;
esac

# 1b. OpenSSL's FIPS provider, built from Debian's source and cached like the root filesystem
# (keyed by the provider script: its pins). Installed with its module configuration and an
# OpenSSL configuration that activates it with the base provider only and asks every fetch for
# fips=yes: the image's node runs in FIPS mode (docs/fips.md).
fips_key=$(sha256sum <"$root/scripts/build-fips-provider.sh" | cut -c1-12)
fips_dir=${rootfs_cache:-$work}/fips-provider-$fips_key
if [ ! -s "$fips_dir/fips.so" ]; then
  step 'building the FIPS provider (cold: compiles OpenSSL)'
  fips_started=$(date +%s)
  bash "$root/scripts/build-fips-provider.sh" --rootfs "$rootfs" --out "$fips_dir"
  step "FIPS provider built in $(($(date +%s) - fips_started)) s"
fi
install -m 0644 "$fips_dir/fips.so" "$rootfs/usr/lib/x86_64-linux-gnu/ossl-modules/fips.so"
mkdir -p "$rootfs/usr/lib/ssl"
install -m 0644 "$fips_dir/fipsmodule.cnf" "$rootfs/usr/lib/ssl/fipsmodule.cnf"
install -m 0644 "$fips_dir/fips-provider.txt" "$rootfs/usr/share/rtb/fips-provider.txt"
# nodejs_conf is the section node reads, openssl_conf the one other OpenSSL users read.
cat >"$rootfs$FIPS_OPENSSL_CONF" <<CNF
openssl_conf = rtb_fips
nodejs_conf = rtb_fips

.include /usr/lib/ssl/fipsmodule.cnf

[rtb_fips]
providers = rtb_providers
alg_section = rtb_algorithms

[rtb_providers]
fips = fips_sect
base = rtb_base

[rtb_base]
activate = 1

[rtb_algorithms]
default_properties = fips=yes
CNF
chmod 0644 "$rootfs$FIPS_OPENSSL_CONF"
fips_check=$(NODE_EXTRA_CA_CERTS='' OPENSSL_CONF="$FIPS_OPENSSL_CONF" chroot "$rootfs" /usr/bin/node -e '
  const c = require("node:crypto");
  let md5 = "refused";
  try { c.createHash("md5"); md5 = "served"; } catch {}
  console.log(`getFips=${c.getFips()} md5=${md5}`);')
[ "$fips_check" = 'getFips=1 md5=refused' ] \
  || { echo "build-image: node does not run in FIPS mode with $FIPS_OPENSSL_CONF: $fips_check" >&2; exit 4; }

# 2. The application: compiled here, production dependencies from package-lock.json.
step 'compiling the project and installing production dependencies'
app=$work/app/app
mkdir -p "$app"
(cd "$root" && node_modules/.bin/tsc -p tsconfig.build.json --outDir "$app/dist")
cp -r "$root/config" "$root/package.json" "$root/package-lock.json" "$app/"
(cd "$app" && npm ci --omit=dev --ignore-scripts --no-audit --no-fund --loglevel=error >&2)
rm -f "$app/package-lock.json"
# Source maps, type declarations, TypeScript sources and docs are half of node_modules and
# nothing loads them at run time.
find "$app/node_modules" -type f \( -name '*.map' -o -name '*.ts' -o -name '*.mts' -o -name '*.cts' \
  -o -name '*.md' -o -name '*.markdown' \) -delete
# The image has no /usr/bin/env: run the CLI with the image's node directly.
sed -i '1s|^#!.*|#!/usr/bin/node|' "$app/dist/cli/main.js"
chmod 755 "$app/dist/cli/main.js"
mkdir -p "$work/app/usr/local/bin"
ln -s /app/dist/cli/main.js "$work/app/usr/local/bin/rtb"
chown -R 0:0 "$work/app"
chmod -R go-w,a+rX "$work/app"

# 3. The image: one layer for Debian, one for the app (so a rebuild of the app reuses the first).
step 'committing the layers with umoci'
layout=$work/oci
created=$(date -u -d "@${SOURCE_DATE_EPOCH:-$(git -C "$root" log -1 --format=%ct 2>/dev/null || date +%s)}" +%Y-%m-%dT%H:%M:%SZ)
umoci init --layout "$layout"
umoci new --image "$layout:$tag"
umoci insert --image "$layout:$tag" --history.created "$created" --history.created_by 'mmdebstrap trixie (scripts/build-image.sh)' "$rootfs" /
umoci insert --image "$layout:$tag" --history.created "$created" --history.created_by 'rtb (scripts/build-image.sh)' "$work/app" /
umoci config --image "$layout:$tag" --no-history --created "$created" \
  --author 'rt-bootstrapper' \
  --config.user "$UID_NONROOT:$UID_NONROOT" \
  --config.workingdir /app \
  --config.env 'PATH=/usr/local/bin:/usr/bin' \
  --config.env 'NODE_ENV=production' \
  --config.env 'HOME=/home/nonroot' \
  --config.env 'NODE_EXTRA_CA_CERTS=' \
  --config.env "OPENSSL_CONF=$FIPS_OPENSSL_CONF" \
  --config.entrypoint /usr/local/bin/rtb \
  --config.label "org.opencontainers.image.title=$name" \
  --config.label "org.opencontainers.image.version=$version" \
  --config.label "io.kyma-project.rt-bootstrapper.release=$reference" \
  --config.label "org.opencontainers.image.licenses=Apache-2.0" \
  --manifest.annotation "org.opencontainers.image.ref.name=$tag"
umoci gc --layout "$layout"

rm -rf "$out.tmp"
mkdir -p "$(dirname "$out")"
mv "$layout" "$out.tmp"
rm -rf "$out"
mv "$out.tmp" "$out"
size=$(du -sb "$out/blobs" | cut -f1)
step "done: $reference, node $node_version, $((size / 1024 / 1024)) MiB compressed in $out"
