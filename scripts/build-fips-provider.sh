#!/usr/bin/env bash
# Builds OpenSSL's FIPS provider (fips.so) from Debian's source package and writes its module
# configuration with `openssl fipsinstall`, run against the image's own libcrypto (docs/fips.md).
#
#   scripts/build-fips-provider.sh --rootfs DIR --out DIR
#
# --rootfs: the image's root filesystem (Debian trixie, unpacked): fipsinstall runs in it, with
#   Debian's `openssl` tool of the same version as its libssl3t64, which is removed afterwards.
# --out: gets fips.so, fipsmodule.cnf and fips-provider.txt (what was built, from what).
#
# Every download is checked against Debian's signed release file: InRelease (gpgv, the machine's
# debian-archive-keyring) → Sources/Packages (SHA-256) → the .dsc and the .deb (SHA-256) → the
# upstream tarball (SHA-256 from the .dsc). Needs root (chroot), curl, gpgv, xz, dpkg-deb, perl,
# make and a C compiler.
set -euo pipefail

# The module's version: a Debian source version of OpenSSL 3.5, the series of the image's libssl.
# Pinned apart from the image's OpenSSL, as a validated module is (docs/fips.md): the provider
# may be older than the libcrypto that loads it, never of another series or newer.
FIPS_SOURCE_VERSION=3.5.7-1~deb13u2
SUITE=trixie
MIRROR=${RTB_DEBIAN_MIRROR:-http://deb.debian.org/debian}
KEYRING=/usr/share/keyrings/debian-archive-keyring.gpg
MODULES_DIR=/usr/lib/x86_64-linux-gnu/ossl-modules

rootfs=''
out=''
while [ $# -gt 0 ]; do
  case "$1" in
    --rootfs) rootfs=$2; shift 2 ;;
    --out) out=$2; shift 2 ;;
    *) echo "build-fips-provider: unknown argument $1" >&2; exit 2 ;;
  esac
done
[ -n "$rootfs" ] && [ -n "$out" ] || { echo 'build-fips-provider: --rootfs DIR and --out DIR are required' >&2; exit 2; }
for tool in curl gpgv xz dpkg-deb perl make cc; do
  command -v "$tool" >/dev/null || { echo "build-fips-provider: $tool is missing" >&2; exit 3; }
done
[ -s "$KEYRING" ] || { echo "build-fips-provider: $KEYRING is missing: apt-get install debian-archive-keyring" >&2; exit 3; }

work=$(mktemp -d /tmp/rtb-fips-XXXXXX)
tool_dir=$rootfs/tmp/rtb-fipsinstall
trap 'rm -rf "$work" "$tool_dir"' EXIT
started=$(date +%s)
step() { echo "build-fips-provider: [$(($(date +%s) - started)) s] $*" >&2; }

fetch() { # url, file
  curl -fsS --retry 3 -o "$2" "$1" || { echo "build-fips-provider: cannot download $1" >&2; exit 5; }
}
check() { # sha256, file
  echo "$1  $2" | sha256sum -c --quiet - || { echo "build-fips-provider: $2 does not match its SHA-256" >&2; exit 5; }
}
# The SHA-256 the signed release file gives an index.
index_sha256() { awk -v f="$1" '/^SHA256:/{s=1; next} /^[^ ]/{s=0} s && $3==f {print $1}' "$work/InRelease"; }
# The stanza of package $2 at version $3 in the index $1 (Sources or Packages); read to the end,
# as an early exit would fail the pipe (pipefail).
stanza() {
  xz -dc "$1" | awk -v p="$2" -v v="$3" 'BEGIN{RS=""} {t="\n" $0 "\n"}
    !found && index(t, "\nPackage: " p "\n") && index(t, "\nVersion: " v "\n") {print; found=1}'
}

step "release file of $SUITE"
fetch "$MIRROR/dists/$SUITE/InRelease" "$work/InRelease"
gpgv --quiet --keyring "$KEYRING" "$work/InRelease" 2>/dev/null \
  || { echo "build-fips-provider: $SUITE's InRelease does not verify with $KEYRING" >&2; exit 5; }

# 1. The source: .dsc from Sources, the upstream tarball from the .dsc.
step "OpenSSL source $FIPS_SOURCE_VERSION"
fetch "$MIRROR/dists/$SUITE/main/source/Sources.xz" "$work/Sources.xz"
check "$(index_sha256 main/source/Sources.xz)" "$work/Sources.xz"
source=$(stanza "$work/Sources.xz" openssl "$FIPS_SOURCE_VERSION")
[ -n "$source" ] || { echo "build-fips-provider: openssl $FIPS_SOURCE_VERSION is not in $SUITE's Sources" >&2; exit 5; }
directory=$(echo "$source" | awk '/^Directory:/{print $2}')
dsc=openssl_$FIPS_SOURCE_VERSION.dsc
fetch "$MIRROR/$directory/$dsc" "$work/$dsc"
check "$(echo "$source" | awk -v f="$dsc" '/^Checksums-Sha256:/{s=1; next} /^[^ ]/{s=0} s && $3==f {print $1}')" "$work/$dsc"
upstream=${FIPS_SOURCE_VERSION%%-*}
tarball=openssl_$upstream.orig.tar.gz
tarball_sha256=$(awk -v f="$tarball" '/^Checksums-Sha256:/{s=1; next} /^[^ ]/{s=0} s && $3==f {print $1}' "$work/$dsc")
[ -n "$tarball_sha256" ] || { echo "build-fips-provider: $dsc names no $tarball" >&2; exit 5; }
fetch "$MIRROR/$directory/$tarball" "$work/$tarball"
check "$tarball_sha256" "$work/$tarball"

# 2. The provider only: generated headers, then fips.so and the two libraries it links
# (libfips.a, libcommon.a); not libcrypto, libssl or the tools. The upstream tarball as released,
# without Debian's patches: a FIPS module is built from its release as its security policy says.
step "building fips.so (enable-fips)"
mkdir "$work/src"
tar -C "$work/src" --strip-components=1 -xzf "$work/$tarball"
(
  cd "$work/src"
  ./Configure linux-x86_64 enable-fips no-docs --prefix=/usr --openssldir=/usr/lib/ssl \
    --libdir=lib/x86_64-linux-gnu >"$work/configure.log" 2>&1 \
    || { tail -20 "$work/configure.log" >&2; exit 6; }
  jobs=$(nproc)
  { make -j"$jobs" build_generated && make -j"$jobs" providers/fips.so; } >"$work/make.log" 2>&1 \
    || { tail -30 "$work/make.log" >&2; exit 6; }
)

# 3. fipsinstall, in the image's root filesystem with Debian's openssl tool of its libssl.
libssl=$(awk -F= '$1=="libssl3t64"{print $2}' "$rootfs/usr/share/rtb/debian-packages.txt")
[ -n "$libssl" ] || { echo 'build-fips-provider: the root filesystem lists no libssl3t64' >&2; exit 4; }
case "${libssl%%-*}" in
  "${upstream%.*}".*) ;;
  *) echo "build-fips-provider: the image's OpenSSL $libssl is not of the module's series ${upstream%.*}" >&2; exit 4 ;;
esac
step "openssl fipsinstall with openssl $libssl"
fetch "$MIRROR/dists/$SUITE/main/binary-amd64/Packages.xz" "$work/Packages.xz"
check "$(index_sha256 main/binary-amd64/Packages.xz)" "$work/Packages.xz"
binary=$(stanza "$work/Packages.xz" openssl "$libssl")
[ -n "$binary" ] || { echo "build-fips-provider: openssl $libssl is not in $SUITE's Packages" >&2; exit 5; }
fetch "$MIRROR/$(echo "$binary" | awk '/^Filename:/{print $2}')" "$work/openssl.deb"
check "$(echo "$binary" | awk '/^SHA256:/{print $2}')" "$work/openssl.deb"
dpkg-deb -x "$work/openssl.deb" "$work/openssl"
mkdir -p "$tool_dir" "$rootfs$MODULES_DIR"
install -m 0755 "$work/openssl/usr/bin/openssl" "$tool_dir/openssl"
install -m 0644 "$work/src/providers/fips.so" "$rootfs$MODULES_DIR/fips.so"
chroot "$rootfs" /tmp/rtb-fipsinstall/openssl fipsinstall -module "$MODULES_DIR/fips.so" \
  -provider_name fips -section_name fips_sect -out /tmp/rtb-fipsinstall/fipsmodule.cnf >"$work/fipsinstall.log" 2>&1 \
  || { cat "$work/fipsinstall.log" >&2; exit 7; }
# The provider as libcrypto sees it: name, version and build, loaded through the new config.
printf 'openssl_conf = init\n.include /tmp/rtb-fipsinstall/fipsmodule.cnf\n[init]\nproviders = prov\n[prov]\nfips = fips_sect\n' \
  >"$tool_dir/check.cnf"
listed=$(OPENSSL_CONF=/tmp/rtb-fipsinstall/check.cnf chroot "$rootfs" /tmp/rtb-fipsinstall/openssl list -providers)
echo "$listed" | grep -q 'status: active' || { echo "build-fips-provider: the provider does not load: $listed" >&2; exit 7; }

rm -rf "$out.tmp"
mkdir -p "$out.tmp"
install -m 0644 "$work/src/providers/fips.so" "$out.tmp/fips.so"
install -m 0644 "$tool_dir/fipsmodule.cnf" "$out.tmp/fipsmodule.cnf"
{
  echo "source: Debian openssl $FIPS_SOURCE_VERSION ($tarball sha256 $tarball_sha256), enable-fips"
  echo "fipsinstall: Debian openssl $libssl"
  echo "$listed"
} >"$out.tmp/fips-provider.txt"
rm -f "$rootfs$MODULES_DIR/fips.so"
rm -rf "$out"
mv "$out.tmp" "$out"
step "done: $(grep -m1 'version:' "$out/fips-provider.txt" | tr -s ' \t' ' ') in $out"
