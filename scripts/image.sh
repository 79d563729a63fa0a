#!/usr/bin/env bash
# The loadrig image without a registry or a Docker daemon (docs/distributed.md): a static
# build (x86_64-unknown-linux-musl) and Debian's CA certificates, on nothing (FROM scratch),
# written as an image tarball by scripts/oci-image.sh.
#   scripts/image.sh [--profile release|dev|NAME] [--ref NAME:TAG] [-o OUT.tar]
# Then: ctr -n k8s.io images import OUT.tar (containerd; a kubelet's node), docker load -i
# OUT.tar, or skopeo copy oci-archive:OUT.tar docker://REGISTRY/loadrig:TAG.
# The Dockerfile builds the same program for machines that reach Docker Hub.
set -euo pipefail
cd "$(dirname "$0")/.."

target=x86_64-unknown-linux-musl
profile=release
version=$(sed -n 's/^version = "\(.*\)"/\1/p' Cargo.toml | head -1)
ref=loadrig.local/loadrig:$version
out=
while [ $# -gt 0 ]; do
    case $1 in
        --profile) profile=$2; shift 2 ;;
        --ref) ref=$2; shift 2 ;;
        -o | --out) out=$2; shift 2 ;;
        *) echo "usage: $0 [--profile release|dev|NAME] [--ref NAME:TAG] [-o OUT.tar]" >&2; exit 2 ;;
    esac
done
out=${out:-target/loadrig-image-$profile.tar}

# musl-gcc compiles the C inside the crates (SQLite, ring) for the static target.
need=()
command -v musl-gcc >/dev/null || need+=(musl-tools)
[ -f /etc/ssl/certs/ca-certificates.crt ] || need+=(ca-certificates)
if [ ${#need[@]} -gt 0 ]; then
    if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
        echo "$0: needs ${need[*]} (Debian's packages: apt-get install ${need[*]})" >&2
        exit 2
    fi
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${need[@]}" >/dev/null
fi
rustup target list --installed 2>/dev/null | grep -qx $target || rustup target add $target

cargo build --locked --profile "$profile" --target $target --bin loadrig
dir=$profile
[ "$profile" = dev ] && dir=debug
binary=${CARGO_TARGET_DIR:-target}/$target/$dir/loadrig

rootfs=$(mktemp -d)
trap 'rm -rf "$rootfs"' EXIT
mkdir -p "$rootfs/usr/local/bin" "$rootfs/etc/ssl/certs" "$rootfs/tmp"
chmod 1777 "$rootfs/tmp"
# Without debug information: the image is copied to every node.
objcopy --strip-debug "$binary" "$rootfs/usr/local/bin/loadrig"
cp /etc/ssl/certs/ca-certificates.crt "$rootfs/etc/ssl/certs/"
scripts/oci-image.sh "$rootfs" "$ref" "$out" --user 65534:65534 --entrypoint /usr/local/bin/loadrig
echo "$out"
