#!/usr/bin/env bash
# Writes the fixtures of src/workload/ycsb/reference/: key frequencies of YCSB 0.17.0's own Java
# key generators, which src/workload/ycsb/java_reference.rs compares loadrig's with. Compiles
# scripts/ycsb-reference/YcsbReference.java (loadrig's code) against YCSB's core jar, fetched
# from Maven Central by mvn, and runs it once per case. Needs Java 11+, javac and mvn; the
# tests do not (the fixtures are committed).
#
# Usage: scripts/ycsb-reference.sh [DRAWS] [CASE...]
#   DRAWS  draws per case (default 100000000); CASE: zipfian scrambled scrambled_keys latest
#          hotspot exponential (default: all)
# YCSB's generators cannot be seeded (ThreadLocalRandom): each run writes new frequencies.
set -euo pipefail
shopt -s inherit_errexit
cd "$(dirname "$0")/.."

draws=${1:-100000000}
shift || true
cases=("$@")
((${#cases[@]})) || cases=(zipfian scrambled scrambled_keys latest hotspot exponential)

artifact=site.ycsb:core:0.17.0
mvn -q dependency:get -Dartifact="$artifact" >&2
jar=${M2_REPO:-$HOME/.m2/repository}/site/ycsb/core/0.17.0/core-0.17.0.jar
[[ -f $jar ]] || {
    echo "no $jar after mvn dependency:get" >&2
    exit 1
}

build=$(mktemp -d)
trap 'rm -rf "$build"' EXIT
javac -d "$build" -cp "$jar" scripts/ycsb-reference/YcsbReference.java

mkdir -p src/workload/ycsb/reference
for c in "${cases[@]}"; do
    out=src/workload/ycsb/reference/$c.txt
    echo "$c: $draws draws -> $out" >&2
    java -cp "$jar:$build" YcsbReference "$c" "$draws" \
        "scripts/ycsb-reference.sh $draws $c" >"$out.tmp"
    mv "$out.tmp" "$out"
done
