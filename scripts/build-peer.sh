#!/usr/bin/env bash
# Builds a peer benchmark client that Debian does not package, from its upstream source, into
# target/peers/NAME/ (target/ is the repository's ignored build directory: no peer's code is
# committed, and loadrig ships none of it). Prints the built binary's path on stdout; a
# binary already built at the pinned commit is reused.
#
# Usage: scripts/build-peer.sh memtier|ghz|etcd-benchmark
#   memtier  memtier_benchmark (Redis Ltd, GPL-2.0) at commit 2f74d61 (2026-03-23, "Fix
#            Alpine build", git describe 2.2.0-28-g2f74d61), the commit the figures in
#            docs/performance.md were measured with: autoreconf, configure and make with the
#            default -O2 -g, against Debian's libevent and OpenSSL. The binary is
#            target/peers/memtier/memtier_benchmark; give it to the bench scripts as
#            MEMTIER=target/peers/memtier/memtier_benchmark.
#   ghz      ghz (Bojan Djurkovic, Apache-2.0), the gRPC load tool, v0.120.0, installed as a Go
#            module (`go install github.com/bojand/ghz/cmd/ghz@v0.120.0` through the Go module
#            proxy) with a build and module cache of its own under target/peers/ghz/, both
#            removed after the build. Needs Go (1.22 or later). The binary is
#            target/peers/ghz/ghz; give it to scripts/bench-grpc.sh as GHZ=target/peers/ghz/ghz.
#   etcd-benchmark  etcd's own load tool (`tools/benchmark` of go.etcd.io/etcd/v3, Apache-2.0) at
#            v3.5.11, built the same way; its module's go.mod replaces its sibling modules with
#            folders, which `go install` refuses, so it is built as a dependency of a throwaway
#            module (where those replaces do not apply). The binary is
#            target/peers/etcd-benchmark/benchmark; scripts/bench-grpc.sh takes it as
#            ETCD_BENCHMARK=target/peers/etcd-benchmark/benchmark.
#
# The source is cloned from its upstream repository (PEER_REPO, default the project's
# public git repository below), which needs network access to it. Where there is none,
# clone or copy that repository onto the machine some other way and point PEER_REPO at it
# (a local path, a work tree or a bare repository): the pinned commit is checked out of it.
# PEER_REF=COMMIT builds another commit instead (the figures were not measured with it).
# Build dependencies come from Debian's packages (installed when missing; needs root).
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

say() { echo "build-peer: $*" >&2; }

case ${1:-} in
memtier)
    name=memtier
    upstream=https://github.com/RedisLabs/memtier_benchmark.git
    pinned=2f74d61183f8ea538fb83984e85bd7f67697e0dc
    binary=memtier_benchmark
    packages=(build-essential autoconf automake libtool pkg-config libevent-dev libssl-dev zlib1g-dev)
    ;;
ghz)
    name=ghz
    gomodule=github.com/bojand/ghz/cmd/ghz
    pinned=v0.120.0
    binary=ghz
    ;;
etcd-benchmark)
    name=etcd-benchmark
    gomodule=go.etcd.io/etcd/v3/tools/benchmark
    gorequire=go.etcd.io/etcd/v3
    pinned=v3.5.11
    binary=benchmark
    ;;
*)
    echo "usage: $0 memtier|ghz|etcd-benchmark" >&2
    exit 2
    ;;
esac

repo=${PEER_REPO:-${upstream:-}}
ref=${PEER_REF:-$pinned}
dest=target/peers/$name
src=$dest/src

# Reuse a binary built from the same commit.
if [[ -x $dest/$binary && -f $dest/COMMIT && $(<"$dest/COMMIT") == "$ref" ]]; then
    echo "$dest/$binary"
    exit 0
fi

rm -rf "$src" "$dest/$binary" "$dest/COMMIT"
mkdir -p "$dest"

# A Go module: `go install` at the pinned version, with caches of its own that are removed
# after (a Go build cache grows to gigabytes).
if [[ -n ${gomodule:-} ]]; then
    command -v go >/dev/null || {
        say "$name is built with Go, which is not installed (Debian's golang-go, or go.dev)"
        exit 2
    }
    cache=$PWD/$dest/cache
    say "installing $gomodule@$ref with go"
    (
        export GOBIN=$PWD/$dest GOCACHE=$cache/build GOMODCACHE=$cache/mod GOFLAGS=-mod=mod
        if [[ -n ${gorequire:-} ]]; then
            mkdir -p "$cache/main"
            cd "$cache/main"
            go mod init loadrig.peer/build
            go get "$gorequire@$ref"
            go build -o "$GOBIN/$binary" "$gomodule"
        else
            go install "$gomodule@$ref"
        fi
        go clean -cache -modcache
    ) >"$dest/build.log" 2>&1 || {
        tail -n 30 "$dest/build.log" >&2
        chmod -R u+w "$cache" 2>/dev/null || true
        rm -rf "$cache"
        say "the build failed; its whole log is $dest/build.log"
        exit 2
    }
    rm -rf "$cache"
    echo "$ref" >"$dest/COMMIT"
    echo "$dest/$binary"
    exit 0
fi

say "cloning $repo into $src"
git clone --quiet "$repo" "$src" || {
    say "could not clone $repo: this machine may have no network access to it."
    say "Bring the repository onto the machine another way and run again with PEER_REPO=PATH."
    exit 2
}
git -C "$src" -c advice.detachedHead=false checkout --quiet "$ref" || {
    say "$repo has no commit $ref (PEER_REPO must hold it; PEER_REF names another)"
    exit 2
}

missing=()
for p in "${packages[@]}"; do dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p"); done
if ((${#missing[@]})); then
    [[ $(id -u) == 0 ]] || {
        say "missing packages: ${missing[*]} (apt-get install them, or run this as root)"
        exit 2
    }
    say "installing ${missing[*]}"
    apt=(apt-get -o DPkg::Lock::Timeout=600 -y -qq --no-install-recommends) # wait for another apt-get
    {
        DEBIAN_FRONTEND=noninteractive "${apt[@]}" install "${missing[@]}" ||
            { "${apt[@]}" update && DEBIAN_FRONTEND=noninteractive "${apt[@]}" install "${missing[@]}"; }
    } >"$dest/apt.log" 2>&1 || {
        tail -n 20 "$dest/apt.log" >&2
        say "could not install ${missing[*]} from Debian's packages (log: $dest/apt.log)"
        exit 2
    }
fi

say "building $name at $(git -C "$src" describe --tags --always) in $src"
(
    cd "$src"
    autoreconf -ivf
    ./configure
    make -j"$(nproc)"
) >"$dest/build.log" 2>&1 || {
    tail -n 30 "$dest/build.log" >&2
    say "the build failed; its whole log is $dest/build.log"
    exit 2
}
cp "$src/$binary" "$dest/$binary"
echo "$ref" >"$dest/COMMIT"
echo "$dest/$binary"
