#!/usr/bin/env bash
# The directory study's offline load, for comparison with its online one (docs/studies/
# directory.md): the same N people as LDIF (`loadrig gen ldif`), loaded with `slapadd -q`
# into a fresh back-mdb database configured as scripts/services.sh configures slapd (same
# schemas, indexes and base), timed by the shell. No server runs; everything is in a
# temporary folder that is removed after.
#
#   scripts/bench-slapadd.sh [ENTRIES]        default 100000; needs slapd (Debian's package)
set -euo pipefail

entries=${1:-100000}
base=dc=loadrig,dc=test
loadrig=${LOADRIG:-target/release/loadrig}
[[ -x $loadrig ]] || { echo "build first: cargo build --release (or set LOADRIG)" >&2; exit 2; }
command -v slapadd >/dev/null || { echo "slapadd missing: apt-get install slapd" >&2; exit 2; }

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir "$work/data"
cat >"$work/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
database mdb
maxsize 4294967296
suffix "$base"
directory $work/data
index objectClass eq,pres
index cn,uid eq,pres,sub
EOF
{
    printf 'dn: %s\nobjectClass: dcObject\nobjectClass: organization\ndc: loadrig\no: loadrig\n\n' "$base"
    printf 'dn: ou=loadrig,%s\nobjectClass: organizationalUnit\nou: loadrig\n\n' "$base"
    "$loadrig" gen ldif --entries "$entries" --base "ou=loadrig,$base" | sed '/^version:/d'
} >"$work/people.ldif"
echo "slapadd -q of $entries people (+3 entries above them), back-mdb, indexes as services.sh:"
start=$(date +%s.%N)
slapadd -q -f "$work/slapd.conf" -l "$work/people.ldif"
end=$(date +%s.%N)
awk -v s="$start" -v e="$end" -v n="$entries" \
    'BEGIN { t = e - s; printf "%.1f s, %.0f entries/s\n", t, n / t }'
