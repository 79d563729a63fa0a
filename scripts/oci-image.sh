#!/usr/bin/env bash
# Write a one-layer container image as a tarball, without a Docker daemon or a registry:
#   scripts/oci-image.sh ROOTFS REF OUT.tar [--user UID:GID] [--entrypoint PATH]
# ROOTFS is a folder that becomes the image's whole file system (as FROM scratch does);
# REF names the image (e.g. loadrig.local/loadrig:dev). The tarball is an OCI image layout
# that also carries Docker's manifest.json, so `ctr -n k8s.io images import OUT.tar`,
# `docker load -i OUT.tar` and `podman load` all read it. The layer is reproducible: files
# sorted, owned by 0:0, dated 1970.
set -euo pipefail

usage() { echo "usage: $0 ROOTFS REF OUT.tar [--user UID:GID] [--entrypoint PATH]" >&2; exit 2; }
[ $# -ge 3 ] || usage
rootfs=$1 ref=$2 out=$3
shift 3
user= entrypoint=
while [ $# -gt 0 ]; do
    case $1 in
        --user) user=$2; shift 2 ;;
        --entrypoint) entrypoint=$2; shift 2 ;;
        *) usage ;;
    esac
done
[ -d "$rootfs" ] || { echo "$0: '$rootfs' is not a folder" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
blobs=$work/blobs/sha256
mkdir -p "$blobs"

# Store stdin as a blob; print its digest and size.
blob() {
    local tmp=$work/blob.tmp digest
    cat > "$tmp"
    digest=$(sha256sum "$tmp" | cut -d' ' -f1)
    mv "$tmp" "$blobs/$digest"
    echo "$digest $(stat -c %s "$blobs/$digest")"
}

# The layer, uncompressed: its digest is then also the config's diff_id.
read -r layer layer_size < <(tar -C "$rootfs" --sort=name --owner=0 --group=0 --numeric-owner \
    --mtime=@0 --format=posix --pax-option=exthdr.name=%d/PaxHeaders/%f,delete=atime,delete=ctime \
    -cf - . | blob)

json_list() { [ -n "$1" ] && printf '["%s"]' "$1" || printf 'null'; }
read -r config config_size < <(printf '%s' "{\"architecture\":\"amd64\",\"os\":\"linux\",\
\"config\":{\"User\":\"$user\",\"Entrypoint\":$(json_list "$entrypoint"),\"Env\":[\"PATH=/usr/local/bin:/usr/bin:/bin\"]},\
\"rootfs\":{\"type\":\"layers\",\"diff_ids\":[\"sha256:$layer\"]},\
\"history\":[{\"created_by\":\"scripts/oci-image.sh\"}]}" | blob)

read -r manifest manifest_size < <(printf '%s' "{\"schemaVersion\":2,\
\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\
\"config\":{\"mediaType\":\"application/vnd.oci.image.config.v1+json\",\"digest\":\"sha256:$config\",\"size\":$config_size},\
\"layers\":[{\"mediaType\":\"application/vnd.oci.image.layer.v1.tar\",\"digest\":\"sha256:$layer\",\"size\":$layer_size}]}" | blob)

tag=${ref##*:}
printf '%s' '{"imageLayoutVersion":"1.0.0"}' > "$work/oci-layout"
printf '%s' "{\"schemaVersion\":2,\"mediaType\":\"application/vnd.oci.image.index.v1+json\",\
\"manifests\":[{\"mediaType\":\"application/vnd.oci.image.manifest.v1+json\",\"digest\":\"sha256:$manifest\",\"size\":$manifest_size,\
\"annotations\":{\"io.containerd.image.name\":\"$ref\",\"org.opencontainers.image.ref.name\":\"$tag\"}}]}" > "$work/index.json"
# Docker's own format, for `docker load`.
printf '%s' "[{\"Config\":\"blobs/sha256/$config\",\"RepoTags\":[\"$ref\"],\"Layers\":[\"blobs/sha256/$layer\"]}]" \
    > "$work/manifest.json"

tar -C "$work" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
    -cf "$out.tmp" oci-layout index.json manifest.json blobs
mv "$out.tmp" "$out"
echo "$ref: $out ($(( $(stat -c %s "$out") / 1048576 )) MiB, image sha256:$config)" >&2
