#!/usr/bin/env bash
# Private, throwaway PostgreSQL, MariaDB, Redis (with a password, and a second
# one without: redis-open), OpenLDAP, nginx, etcd and memcached on free loopback ports, for
# integration tests and benchmarks.
#
#   scripts/services.sh up [postgres|mariadb|redis|redis-open|slapd|nginx|etcd|memcached ...]   default: all
#   scripts/services.sh env       export lines:  eval "$(scripts/services.sh env)"
#   scripts/services.sh status    which are up
#   scripts/services.sh down      stop what `up` started, remove the state dir
#   scripts/services.sh restart NAME   start NAME again on its port and data dir (after
#                                 a kill -9, say); stops it first if it is still up
#   scripts/services.sh pid NAME  the server's pid, for tests that signal it
#
# Every server also speaks TLS (its own port, or the same port where the protocol
# negotiates it) with a certificate for 127.0.0.1/localhost from a throwaway CA made
# here with openssl: STATE/tls/ca.crt (exported as LOADRIG_CA_FILE).
#
# LOADRIG_SERVICES_DURABLE=1 at `up`: Redis appends every write to its AOF before it
# answers, so acknowledged keys outlive a kill -9 (fault tests count them).
#
# Everything lives in ${LOADRIG_SERVICES_DIR:-/tmp/loadrig-services}; only the
# processes recorded there are ever signalled. See docs/services.md.
set -euo pipefail

STATE=$(realpath -m "${LOADRIG_SERVICES_DIR:-/tmp/loadrig-services}")
SVC_USER=loadrig-svc
# Runs a command as $SVC_USER by exec, not fork, so `$!` is the server itself.
AS_SVC=(setpriv --reuid="$SVC_USER" --regid="$SVC_USER" --init-groups --)
ALL=(postgres mariadb redis redis-open slapd nginx etcd memcached)
LDAP_BASE=dc=loadrig,dc=test
LDAP_ADMIN=cn=admin,$LDAP_BASE
WAIT_SECONDS=30

say() { echo "services: $*" >&2; }
die() {
    say "error: $*"
    exit 1
}

usage() {
    echo "usage: $0 up [${ALL[*]}] | down | env | status | restart NAME | pid NAME" >&2
    exit 2
}

# Serialise concurrent callers on one state dir; -o keeps the lock fd out of
# the servers we start, which would otherwise hold it forever.
if [[ -z ${LOADRIG_SERVICES_LOCKED:-} ]]; then
    mkdir -p "$(dirname "$STATE")"
    LOADRIG_SERVICES_LOCKED=1 exec flock -o "$STATE.lock" "$BASH" "$0" "$@"
fi

# Files we write hold passwords; the servers' own files are chowned to them.
umask 077

# --- helpers ---------------------------------------------------------------

password() {
    # 20 alphanumeric chars; tr reads a bounded input, so no SIGPIPE under pipefail.
    local s
    s=$(LC_ALL=C tr -dc 'A-Za-z0-9' < <(head -c 1000 /dev/urandom))
    echo "${s:0:20}"
}

free_port() {
    # A port nobody is bound to, below the kernel's ephemeral range: a port the kernel hands
    # out for bind(0) comes from that range, and any outgoing connection (the tests open
    # thousands) may take it before the server binds it ("Address already in use").
    python3 -c '
import random, socket
low = int(open("/proc/sys/net/ipv4/ip_local_port_range").read().split()[0])
candidates = [random.randrange(10000, low) for _ in range(200)] if low > 11000 else []
for port in candidates + [0]:
    s = socket.socket()
    try:
        s.bind(("127.0.0.1", port))
        print(s.getsockname()[1])
        break
    except OSError:
        pass
    finally:
        s.close()
'
}

# Process name of each server as /proc/PID/comm shows it, and the signal that
# stops it promptly (SIGINT is PostgreSQL's fast shutdown; SIGTERM would wait
# for clients to disconnect).
comm_of() {
    case $1 in
    postgres) echo postgres ;; mariadb) echo mariadbd ;; redis | redis-open) echo redis-server ;;
    slapd) echo slapd ;; nginx) echo nginx ;;
    etcd) echo etcd ;;
    memcached) echo memcached ;;
    esac
}
signal_of() { if [[ $1 == postgres ]]; then echo INT; else echo TERM; fi; }

# A recorded pid is only ours if it is still that server and its command line
# names our state dir: pids get reused, and other people run the same servers
# on this machine. Zombies have an empty command line, so they do not count.
is_ours() { # svc pid
    local pid=$2 cmdline
    [[ $pid =~ ^[0-9]+$ ]] || return 1
    [[ $(cat "/proc/$pid/comm" 2>/dev/null) == "$(comm_of "$1")" ]] || return 1
    cmdline=$(tr '\0' ' ' <"/proc/$pid/cmdline" 2>/dev/null) || return 1
    [[ $cmdline == *"$STATE/"* ]]
}

running_pid() { # svc -> prints the pid if the server is up
    local pid
    pid=$(cat "$STATE/$1/pid" 2>/dev/null) || return 1
    is_ours "$1" "$pid" && echo "$pid"
}

# Start a server in the foreground of its own session (so no terminal signal
# reaches it) with its output in its log, and record its pid.
launch() { # svc log command...
    local svc=$1 log=$2
    shift 2
    # Owned by the service user: nginx reopens its log by name.
    touch "$log"
    chown "$SVC_USER:$SVC_USER" "$log"
    # Kept for `restart`, which launches the same command on the same port and data.
    printf '%q ' "$@" >"$STATE/$svc/launch.cmd"
    setsid "$@" </dev/null >>"$log" 2>&1 &
    echo "$!" >"$STATE/$svc/pid"
}

start_failed() { # svc log why
    tail -n 5 "$2" >&2 2>/dev/null || true
    die "$1 $3; see $2 (then run '$0 down')"
}

wait_ready() { # svc log probe...
    local svc=$1 log=$2 pid st deadline=$((SECONDS + WAIT_SECONDS))
    shift 2
    printf '%q ' "$@" >"$STATE/$svc/probe.cmd"
    pid=$(cat "$STATE/$svc/pid")
    while ((SECONDS < deadline)); do
        # Our own child: once it dies it stays a zombie until we exit.
        if ! st=$(ps -o stat= -p "$pid") || [[ $st == *Z* ]]; then
            start_failed "$svc" "$log" "exited while starting"
        fi
        # A bounded probe: whatever else may hold the port must not hang us.
        timeout 2 "$@" >/dev/null 2>&1 && return 0
        sleep 0.1
    done
    start_failed "$svc" "$log" "did not accept connections within $WAIT_SECONDS s"
}

stop_svc() { # svc -> stops the server and whatever it left behind
    local svc=$1 pid i
    if pid=$(running_pid "$svc"); then
        kill "-$(signal_of "$svc")" "$pid"
        for ((i = 0; i < WAIT_SECONDS * 10; i++)); do
            is_ours "$svc" "$pid" || break
            sleep 0.1
        done
        if is_ours "$svc" "$pid"; then
            say "$svc: pid $pid still there after $WAIT_SECONDS s, sending SIGKILL"
            kill -KILL "$pid" 2>/dev/null || true
        fi
        say "$svc: stopped"
    else
        say "$svc: was not running"
    fi
    sweep "$svc"
}

# Processes a server left behind when it died abruptly (nginx workers outlive
# a killed master) are known by their name and by standing in our state dir.
sweep() { # svc
    local p cwd other others=" "
    # Another service of the same program (redis-open beside redis) is not a leftover.
    for other in "${ALL[@]}"; do
        if [[ $other != "$1" && -r $STATE/$other/pid ]]; then
            others+="$(cat "$STATE/$other/pid") "
        fi
    done
    for p in $(pgrep -x "$(comm_of "$1")"); do
        [[ $others == *" $p "* ]] && continue
        cwd=$(readlink "/proc/$p/cwd" 2>/dev/null) || continue
        if [[ $cwd == "$STATE" || $cwd == "$STATE/"* ]]; then
            say "$1: killing leftover pid $p"
            kill -KILL "$p" 2>/dev/null || true
        fi
    done
}

# One export line; a value with a character the shell would act on (a TLS URL's `?` and
# `&`) in single quotes, the others bare, as readers that split on '=' expect.
export_line() { # KEY=VALUE
    if [[ $1 == *[^A-Za-z0-9_=:/@.,+-]* ]]; then
        printf "export %s='%s'\n" "${1%%=*}" "${1#*=}"
    else
        printf 'export %s\n' "$1"
    fi
}

write_fragment() { # svc KEY=VALUE... -> the service's part of the env file
    local svc=$1 kv
    shift
    for kv in "$@"; do export_line "$kv"; done >"$STATE/$svc/env"
}

write_env() {
    # Only servers that are up are exported; written whole, then renamed.
    local svc
    {
        export_line "LOADRIG_CA_FILE=$STATE/tls/ca.crt"
        export_line "LOADRIG_WRONG_CA_FILE=$STATE/tls/wrong-ca.crt"
        for svc in "${ALL[@]}"; do
            if running_pid "$svc" >/dev/null; then cat "$STATE/$svc/env"; fi
        done
    } >"$STATE/env.tmp"
    mv "$STATE/env.tmp" "$STATE/env"
}

# A throwaway CA and one server certificate it signs, for every server's TLS port,
# made once per state dir. A second CA that signed nothing (wrong-ca.crt) lets tests
# check that a certificate from another CA is refused. The server key belongs to the
# service user, mode 0600 (PostgreSQL refuses a key others can read).
make_tls() {
    local dir=$STATE/tls
    [[ -r $dir/server.crt ]] && return 0
    command -v openssl >/dev/null || die "tls: openssl is not installed"
    rm -rf "$dir"
    mkdir -p "$dir"
    {
        openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=loadrig throwaway CA" \
            -keyout "$dir/ca.key" -out "$dir/ca.crt" &&
            openssl req -x509 -newkey rsa:2048 -nodes -days 30 -subj "/CN=loadrig wrong CA" \
                -keyout "$dir/wrong-ca.key" -out "$dir/wrong-ca.crt" &&
            openssl req -newkey rsa:2048 -nodes -subj "/CN=127.0.0.1" \
                -keyout "$dir/server.key" -out "$dir/server.csr" &&
            openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
                -CAcreateserial -days 30 -out "$dir/server.crt" \
                -extfile <(printf '%s\n' "subjectAltName=IP:127.0.0.1,DNS:localhost" \
                    "extendedKeyUsage=serverAuth")
    } >"$dir/openssl.log" 2>&1 || die "tls: openssl failed; see $dir/openssl.log"
    rm -f "$dir/ca.key" "$dir/wrong-ca.key" "$dir/server.csr"
    chmod 755 "$dir"
    chmod 644 "$dir/ca.crt" "$dir/wrong-ca.crt" "$dir/server.crt"
    chown "$SVC_USER:$SVC_USER" "$dir/server.key"
    chmod 600 "$dir/server.key"
}

# --- installation ----------------------------------------------------------

packages_of() {
    case $1 in
    postgres) echo postgresql ;;
    mariadb) echo mariadb-server mariadb-client ;;
    redis | redis-open) echo redis-server ;;
    slapd) echo slapd ldap-utils unixodbc odbc-postgresql ;; # back_sql over ODBC: the directory study
    etcd) echo etcd-server etcd-client curl ;;
    nginx) echo nginx curl ;;
    memcached) echo memcached ;;
    esac
}

# Right after we installed a package, stop the default instance it may have
# started (Debian starts services on install unless policy-rc.d forbids it),
# so it holds no ports or memory. Never done for packages already present.
stop_system_instance() { # package
    local name
    case $1 in
    postgresql)
        local ver cluster _port status _rest
        while read -r ver cluster _port status _rest; do
            if [[ $status == online* ]]; then pg_ctlcluster "$ver" "$cluster" stop; fi
        done < <(pg_lsclusters -h)
        return 0
        ;;
    mariadb-server) name=mariadb ;;
    redis-server | slapd | nginx | memcached) name=$1 ;;
    etcd-server) name=etcd ;;
    *) return 0 ;;
    esac
    if service "$name" status >/dev/null 2>&1; then
        say "stopping the system $name that its package started"
        service "$name" stop >/dev/null 2>&1
    fi
}

install_missing() { # svc...
    local svc pkg missing=()
    for svc in "$@"; do
        for pkg in $(packages_of "$svc"); do
            if [[ $(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null) != "install ok installed" ]]; then
                missing+=("$pkg")
            fi
        done
    done
    command -v python3 >/dev/null || missing+=(python3)
    command -v openssl >/dev/null || missing+=(openssl)
    ((${#missing[@]})) || return 0
    say "installing ${missing[*]} (log: $STATE/apt.log)"
    {
        apt-get update -qq &&
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
                -o DPkg::Lock::Timeout=300 "${missing[@]}"
    } >"$STATE/apt.log" 2>&1 || {
        tail -n 20 "$STATE/apt.log" >&2
        die "package installation failed; see $STATE/apt.log"
    }
    for pkg in "${missing[@]}"; do stop_system_instance "$pkg"; done
}

ensure_user() {
    id -u "$SVC_USER" >/dev/null 2>&1 ||
        useradd --system --user-group --no-create-home --home-dir /nonexistent \
            --shell /usr/sbin/nologin "$SVC_USER"
    "${AS_SVC[@]}" test -x "$STATE" ||
        die "$STATE is not reachable by user $SVC_USER; choose another LOADRIG_SERVICES_DIR"
}

# --- the servers -----------------------------------------------------------
# Each start_X fills a fresh $STATE/X owned by $SVC_USER, launches the server
# as that user, waits for it and writes its env fragment.

start_postgres() {
    local dir=$STATE/postgres port pw bin
    # The Debian build that matches initdb, not whatever `postgres` is on PATH.
    bin=$(dirname "$(printf '%s\n' /usr/lib/postgresql/*/bin/initdb | sort -V | tail -n1)")
    [[ -x $bin/postgres ]] || die "postgres: no server under /usr/lib/postgresql"
    port=$(free_port)
    pw=$(password)
    # Superuser `postgres` only over the private socket (trust; LOADRIG_PG_SUPER_URL, for an
    # experiment's server settings); TCP needs SCRAM.
    "${AS_SVC[@]}" "$bin/initdb" -D "$dir/data" -U postgres -E UTF8 --no-locale --no-sync \
        --auth-local=trust --auth-host=scram-sha-256 >"$dir/initdb.log" 2>&1 ||
        die "postgres: initdb failed; see $dir/initdb.log"
    # One role without a password and one with md5, for measuring the handshake per
    # authentication method (the connections study): first match wins, so they go above
    # initdb's lines.
    { echo "host loadrig_trust loadrig_trust 127.0.0.1/32 trust"
      echo "host loadrig_md5 loadrig_md5 127.0.0.1/32 md5"
      cat "$dir/data/pg_hba.conf"; } >"$dir/pg_hba.new"
    mv "$dir/pg_hba.new" "$dir/data/pg_hba.conf"
    mkdir "$dir/run"
    cat >>"$dir/data/postgresql.conf" <<EOF
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$dir/run'
max_connections = 300
ssl = on
ssl_cert_file = '$STATE/tls/server.crt'
ssl_key_file = '$STATE/tls/server.key'
# The server's own time and calls per statement, for loadrig's observer (docs/observe.md);
# the extension is created in the loadrig database below.
shared_preload_libraries = 'pg_stat_statements'
EOF
    chown -R "$SVC_USER:$SVC_USER" "$dir"
    launch postgres "$dir/log" "${AS_SVC[@]}" "$bin/postgres" -D "$dir/data"
    wait_ready postgres "$dir/log" "$bin/pg_isready" -q -h 127.0.0.1 -p "$port"
    "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/run" -p "$port" -U postgres -d postgres \
        -c "CREATE ROLE loadrig LOGIN PASSWORD '$pw'" \
        -c "CREATE DATABASE loadrig OWNER loadrig" \
        -c "CREATE ROLE loadrig_trust LOGIN" \
        -c "CREATE DATABASE loadrig_trust OWNER loadrig_trust" \
        -c "SET password_encryption = 'md5'" \
        -c "CREATE ROLE loadrig_md5 LOGIN PASSWORD '$pw'" \
        -c "CREATE DATABASE loadrig_md5 OWNER loadrig_md5" >/dev/null
    # As the superuser, in loadrig's database only: the observer never creates it, and
    # loadrig_trust's database stays without it (what observing there lacks is tested).
    "$bin/psql" -X -q -v ON_ERROR_STOP=1 -h "$dir/run" -p "$port" -U postgres -d loadrig \
        -c "CREATE EXTENSION pg_stat_statements" >/dev/null
    write_fragment postgres LOADRIG_PG_HOST=127.0.0.1 "LOADRIG_PG_PORT=$port" \
        LOADRIG_PG_USER=loadrig "LOADRIG_PG_PASSWORD=$pw" LOADRIG_PG_DB=loadrig \
        "LOADRIG_PG_URL=postgres://loadrig:$pw@127.0.0.1:$port/loadrig" \
        "LOADRIG_PG_TRUST_URL=postgres://loadrig_trust@127.0.0.1:$port/loadrig_trust" \
        "LOADRIG_PG_MD5_URL=postgres://loadrig_md5:$pw@127.0.0.1:$port/loadrig_md5" \
        "LOADRIG_PG_TLS_URL=postgres://loadrig:$pw@127.0.0.1:$port/loadrig?sslmode=verify-full&ca=$STATE/tls/ca.crt" \
        "LOADRIG_PG_SUPER_URL=postgres://postgres@${dir//\//%2F}%2Frun:$port/loadrig"
}

start_mariadb() {
    local dir=$STATE/mariadb port pw
    port=$(free_port)
    pw=$(password)
    # --defaults-file: nothing from the system's /etc/mysql is read. Without
    # log-error, mariadbd logs to stderr, which launch sends to our log.
    cat >"$dir/my.cnf" <<EOF
[mariadbd]
datadir = $dir/data
port = $port
bind-address = 127.0.0.1
socket = $dir/mariadb.sock
skip-name-resolve
max_connections = 300
ssl-cert = $STATE/tls/server.crt
ssl-key = $STATE/tls/server.key
ssl-ca = $STATE/tls/ca.crt
# Statement digests and wait summaries for loadrig's observer (docs/observe.md).
performance_schema = ON
EOF
    chown -R "$SVC_USER:$SVC_USER" "$dir"
    "${AS_SVC[@]}" mariadb-install-db --defaults-file="$dir/my.cnf" --skip-test-db \
        --auth-root-authentication-method=socket >"$dir/install-db.log" 2>&1 ||
        die "mariadb: mariadb-install-db failed; see $dir/install-db.log"
    launch mariadb "$dir/log" "${AS_SVC[@]}" mariadbd --defaults-file="$dir/my.cnf"
    wait_ready mariadb "$dir/log" \
        mariadb-admin --no-defaults --socket="$dir/mariadb.sock" -uroot ping
    # root@localhost authenticates by unix socket as the OS root user.
    mariadb --no-defaults --socket="$dir/mariadb.sock" -uroot <<EOF
CREATE DATABASE loadrig;
CREATE USER 'loadrig'@'127.0.0.1' IDENTIFIED BY '$pw';
CREATE USER 'loadrig'@'localhost' IDENTIFIED BY '$pw';
GRANT ALL PRIVILEGES ON loadrig.* TO 'loadrig'@'127.0.0.1', 'loadrig'@'localhost';
GRANT SELECT ON performance_schema.* TO 'loadrig'@'127.0.0.1', 'loadrig'@'localhost';
GRANT PROCESS ON *.* TO 'loadrig'@'127.0.0.1', 'loadrig'@'localhost';
-- A user who logs in with MariaDB's ed25519 plugin (the connections study's row).
INSTALL SONAME 'auth_ed25519';
CREATE DATABASE loadrig_ed25519;
CREATE USER 'loadrig_ed25519'@'127.0.0.1' IDENTIFIED VIA ed25519 USING PASSWORD('$pw');
GRANT ALL PRIVILEGES ON loadrig_ed25519.* TO 'loadrig_ed25519'@'127.0.0.1';
GRANT SELECT ON performance_schema.* TO 'loadrig_ed25519'@'127.0.0.1';
EOF
    write_fragment mariadb LOADRIG_MYSQL_HOST=127.0.0.1 "LOADRIG_MYSQL_PORT=$port" \
        LOADRIG_MYSQL_USER=loadrig "LOADRIG_MYSQL_PASSWORD=$pw" LOADRIG_MYSQL_DB=loadrig \
        "LOADRIG_MYSQL_URL=mysql://loadrig:$pw@127.0.0.1:$port/loadrig" \
        "LOADRIG_MYSQL_ED25519_URL=mysql://loadrig_ed25519:$pw@127.0.0.1:$port/loadrig_ed25519" \
        "LOADRIG_MYSQL_TLS_URL=mysql://loadrig:$pw@127.0.0.1:$port/loadrig?ssl-mode=VERIFY_IDENTITY&ca=$STATE/tls/ca.crt"
}

start_redis() {
    local dir=$STATE/redis port pw tls_port
    port=$(free_port)
    tls_port=$(free_port)
    pw=$(password)
    redis_conf "$dir" "$port" "$tls_port" "requirepass $pw"
    launch redis "$dir/log" "${AS_SVC[@]}" redis-server "$dir/redis.conf"
    wait_ready redis "$dir/log" \
        env REDISCLI_AUTH="$pw" redis-cli -h 127.0.0.1 -p "$port" --no-auth-warning ping
    write_fragment redis "LOADRIG_REDIS_PORT=$port" "LOADRIG_REDIS_PASSWORD=$pw" \
        "LOADRIG_REDIS_URL=redis://:$pw@127.0.0.1:$port/0" "LOADRIG_REDIS_TLS_PORT=$tls_port" \
        "LOADRIG_REDIS_TLS_URL=rediss://:$pw@127.0.0.1:$tls_port/0?ca=$STATE/tls/ca.crt"
}

# A second Redis that asks for no password: the connections study compares a
# handshake with AUTH and one without on the same build of the server.
start_redis-open() {
    local dir=$STATE/redis-open port tls_port
    port=$(free_port)
    tls_port=$(free_port)
    redis_conf "$dir" "$port" "$tls_port" ""
    launch redis-open "$dir/log" "${AS_SVC[@]}" redis-server "$dir/redis.conf"
    wait_ready redis-open "$dir/log" redis-cli -h 127.0.0.1 -p "$port" ping
    write_fragment redis-open "LOADRIG_REDIS_OPEN_PORT=$port" \
        "LOADRIG_REDIS_OPEN_URL=redis://127.0.0.1:$port/0" \
        "LOADRIG_REDIS_OPEN_TLS_PORT=$tls_port" \
        "LOADRIG_REDIS_OPEN_TLS_URL=rediss://127.0.0.1:$tls_port/0?ca=$STATE/tls/ca.crt"
}

redis_conf() { # dir port tls-port extra-line
    # The config path goes into the process title so is_ours can recognise it.
    local aof=no
    if [[ ${LOADRIG_SERVICES_DURABLE:-} == 1 ]]; then aof=yes; fi
    cat >"$1/redis.conf" <<CONF
bind 127.0.0.1
port $2
tls-port $3
tls-cert-file $STATE/tls/server.crt
tls-key-file $STATE/tls/server.key
tls-ca-cert-file $STATE/tls/ca.crt
# Clients show no certificate of their own.
tls-auth-clients no
$4
save ""
appendonly $aof
# tests/integration/scale.rs runs 10,000 clients beside the other tests' (Redis's default
# is 10,000).
maxclients 15000
dir $1
proc-title-template "{title} {listen-addr} {config-file}"
CONF
    chown -R "$SVC_USER:$SVC_USER" "$1"
}

start_slapd() {
    local dir=$STATE/slapd port pw url tls_port
    port=$(free_port)
    tls_port=$(free_port)
    pw=$(password)
    url=ldap://127.0.0.1:$port
    mkdir "$dir/data"
    cat >"$dir/slapd.conf" <<EOF
include /etc/ldap/schema/core.schema
include /etc/ldap/schema/cosine.schema
include /etc/ldap/schema/inetorgperson.schema
include /etc/ldap/schema/nis.schema
modulepath /usr/lib/ldap
moduleload back_mdb
moduleload back_monitor
# ldaps:// on its own port, and StartTLS on the plain one.
TLSCACertificateFile $STATE/tls/ca.crt
TLSCertificateFile $STATE/tls/server.crt
TLSCertificateKeyFile $STATE/tls/server.key
# Searches may return any number of entries (the default stops at 500).
sizelimit unlimited

database mdb
# Room for large directories; the file grows only as entries are added.
maxsize 4294967296
suffix "$LDAP_BASE"
rootdn "$LDAP_ADMIN"
rootpw $(slappasswd -s "$pw")
directory $dir/data
index objectClass eq,pres
index cn,uid eq,pres,sub

# cn=Monitor (operations, threads, waiters) for loadrig's observer, readable by the
# admin the tests bind as and by nobody else.
database monitor
access to * by dn.exact="$LDAP_ADMIN" read by * none
EOF
    chown -R "$SVC_USER:$SVC_USER" "$dir"
    # -d none: stay in the foreground, errors (only) to our log, not to a syslog.
    launch slapd "$dir/log" "${AS_SVC[@]}" slapd -d none \
        -h "$url/ ldaps://127.0.0.1:$tls_port/" -f "$dir/slapd.conf"
    wait_ready slapd "$dir/log" ldapsearch -x -H "$url" -b "" -s base
    ldapadd -x -H "$url" -D "$LDAP_ADMIN" -w "$pw" >/dev/null <<EOF
dn: $LDAP_BASE
objectClass: dcObject
objectClass: organization
dc: loadrig
o: loadrig
EOF
    write_fragment slapd "LOADRIG_LDAP_URL=$url" "LOADRIG_LDAP_PORT=$port" \
        "LOADRIG_LDAP_BASE=$LDAP_BASE" "LOADRIG_LDAP_BIND_DN=$LDAP_ADMIN" \
        "LOADRIG_LDAP_PASSWORD=$pw" "LOADRIG_LDAPS_PORT=$tls_port" \
        "LOADRIG_LDAPS_URL=ldaps://127.0.0.1:$tls_port?ca=$STATE/tls/ca.crt"
}

start_nginx() {
    local dir=$STATE/nginx port tls_port h2c_port h2_port h2_limits_port h2_bench_port
    nginx -V 2>&1 | grep -q -- --with-http_dav_module ||
        die "nginx: this build lacks ngx_http_dav_module (nginx -V)"
    port=$(free_port)
    tls_port=$(free_port)
    h2c_port=$(free_port)
    h2_port=$(free_port)
    h2_limits_port=$(free_port)
    h2_bench_port=$(free_port)
    mkdir -p "$dir/www/static" "$dir/www/dav" "$dir/tmp"
    printf 'hello from loadrig\n' >"$dir/www/static/hello.txt"
    head -c 4096 /dev/urandom >"$dir/www/static/4k.bin"
    # Text that gzip shrinks: /gzip/ sends it chunked (its compressed length is not known).
    for i in $(seq 200); do printf 'line %d of a text gzip shrinks\n' "$i"; done >"$dir/www/static/text.txt"
    # The locations both the HTTP/1.1 and the HTTP/2 servers serve.
    cat >"$dir/locations.conf" <<EOF
root $dir/www;
location /static/ { }
# Tests count exactly what nginx answered here: unbuffered log, one line a request.
location /counted/ {
    alias $dir/www/static/;
    access_log $dir/counted.log combined;
}
# nginx ends every keep-alive connection after 5 requests (Connection: close).
location /close/ {
    alias $dir/www/static/;
    keepalive_requests 5;
    access_log $dir/counted.log combined;
}
location /piped/ {
    alias $dir/www/static/;
    access_log $dir/piped.log piped;
}
location /gzip/ {
    alias $dir/www/static/;
    gzip on;
    gzip_types text/plain;
    gzip_min_length 1;
    access_log $dir/counted.log combined;
}
# Connections and requests as nginx counts them, for loadrig's observer
# (?status=/nginx_status on the target URL).
location = /nginx_status {
    stub_status;
    allow 127.0.0.1;
    deny all;
    access_log off;
}
location /dav/ {
    dav_methods PUT DELETE MKCOL COPY MOVE;
    create_full_put_path on;
    client_max_body_size 16m;
}
EOF
    # Temp paths share the DAV root's file system so a PUT ends in a rename.
    cat >"$dir/nginx.conf" <<EOF
daemon off;
worker_processes 2;
pid $dir/nginx.pid;
error_log $dir/log;
# 10,000 clients (tests/integration/scale.rs) may all land on one worker; it needs a
# descriptor each.
worker_rlimit_nofile 20000;
events { worker_connections 12000; }
http {
    include /etc/nginx/mime.types;
    default_type application/octet-stream;
    access_log $dir/access.log combined buffer=64k flush=1s;
    # /piped/: each request's connection, its number on it, and \$pipe: p when nginx found it
    # already read behind the request before, . when it read it afresh.
    log_format piped '\$connection \$connection_requests \$pipe \$request_uri';
    sendfile on;
    client_body_temp_path $dir/tmp/client_body;
    proxy_temp_path $dir/tmp/proxy;
    fastcgi_temp_path $dir/tmp/fastcgi;
    uwsgi_temp_path $dir/tmp/uwsgi;
    scgi_temp_path $dir/tmp/scgi;
    server {
        listen 127.0.0.1:$port;
        listen 127.0.0.1:$tls_port ssl;
        ssl_certificate $STATE/tls/server.crt;
        ssl_certificate_key $STATE/tls/server.key;
        include $dir/locations.conf;
    }
    # HTTP/2: cleartext by prior knowledge (h2c: this port speaks nothing else) and over
    # TLS, where ALPN offers h2 (the HTTP/1.1 TLS port above offers only http/1.1); the
    # same locations. No sendfile (see the benchmark server below).
    server {
        listen 127.0.0.1:$h2c_port http2;
        listen 127.0.0.1:$h2_port ssl http2;
        ssl_certificate $STATE/tls/server.crt;
        ssl_certificate_key $STATE/tls/server.key;
        sendfile off;
        include $dir/locations.conf;
    }
    # HTTP/2 (h2c) with low limits, for tests: 2 streams at once on a connection, and a
    # GOAWAY after 20 requests on it. Each request's connection is logged.
    server {
        listen 127.0.0.1:$h2_limits_port http2;
        http2_max_concurrent_streams 2;
        keepalive_requests 20;
        sendfile off;
        root $dir/www;
        access_log $dir/h2-limits.log piped;
        location /static/ { }
    }
    # HTTP/2 (h2c) for benchmarks: h2load does not reconnect after the GOAWAY nginx sends
    # after keepalive_requests (1,000 by default), so here a connection lasts a whole run.
    # No sendfile: nginx 1.22 sends an HTTP/2 response's file by turning Nagle's algorithm
    # back on and corking its DATA frame, which the kernel then holds behind the unacked
    # HEADERS frame until the client's delayed ACK: 44 ms a response, one stream at a time.
    server {
        listen 127.0.0.1:$h2_bench_port http2;
        keepalive_requests 100000000;
        sendfile off;
        root $dir/www;
        location /static/ { }
    }
}
EOF
    chown -R "$SVC_USER:$SVC_USER" "$dir"
    # -e: even what nginx logs before reading its config stays in our dir.
    launch nginx "$dir/log" "${AS_SVC[@]}" nginx -p "$dir" -e "$dir/log" -c "$dir/nginx.conf"
    wait_ready nginx "$dir/log" curl -fsS -o /dev/null "http://127.0.0.1:$port/static/hello.txt"
    write_fragment nginx "LOADRIG_HTTP_URL=http://127.0.0.1:$port" "LOADRIG_HTTP_PORT=$port" \
        "LOADRIG_HTTPS_URL=https://127.0.0.1:$tls_port?ca=$STATE/tls/ca.crt" \
        "LOADRIG_HTTPS_PORT=$tls_port" "LOADRIG_HTTP_COUNTED_LOG=$dir/counted.log" \
        "LOADRIG_HTTP_PIPED_LOG=$dir/piped.log" \
        "LOADRIG_HTTP2_URL=http://127.0.0.1:$h2c_port?http=2" "LOADRIG_HTTP2_PORT=$h2c_port" \
        "LOADRIG_HTTPS2_URL=https://127.0.0.1:$h2_port?ca=$STATE/tls/ca.crt&http=2" \
        "LOADRIG_HTTPS2_PORT=$h2_port" \
        "LOADRIG_HTTP2_LIMITS_URL=http://127.0.0.1:$h2_limits_port?http=2" \
        "LOADRIG_HTTP2_LIMITS_LOG=$dir/h2-limits.log" "LOADRIG_HTTP2_BENCH_PORT=$h2_bench_port"
}

# etcd (Debian's etcd-server), one member, its gRPC API on a plain and a TLS port (the same
# certificate as the others), its data in a throwaway folder. Old revisions are compacted
# beyond the last 10,000, so a long benchmark's puts do not grow the database without end.
start_etcd() {
    local dir=$STATE/etcd port tls_port peer_port
    port=$(free_port)
    tls_port=$(free_port)
    peer_port=$(free_port)
    launch etcd "$dir/log" "${AS_SVC[@]}" etcd --name loadrig --data-dir "$dir/data" \
        --listen-client-urls "http://127.0.0.1:$port,https://127.0.0.1:$tls_port" \
        --advertise-client-urls "http://127.0.0.1:$port" \
        --listen-peer-urls "http://127.0.0.1:$peer_port" \
        --initial-advertise-peer-urls "http://127.0.0.1:$peer_port" \
        --initial-cluster "loadrig=http://127.0.0.1:$peer_port" \
        --cert-file "$STATE/tls/server.crt" --key-file "$STATE/tls/server.key" \
        --auto-compaction-mode revision --auto-compaction-retention 10000 \
        --logger zap --log-level warn
    wait_ready etcd "$dir/log" curl -sf "http://127.0.0.1:$port/health"
    write_fragment etcd "LOADRIG_ETCD_PORT=$port" "LOADRIG_ETCD_URL=grpc://127.0.0.1:$port" \
        "LOADRIG_ETCD_TLS_PORT=$tls_port" \
        "LOADRIG_ETCD_TLS_URL=grpcs://127.0.0.1:$tls_port?ca=$STATE/tls/ca.crt"
}

# memcached on a plain port and a TLS port (Debian's build has TLS: -Z), 128 MB of items
# (the session-stores study stores 50,000 sessions of about 1 KiB).
# Its command line names the state dir (the certificate), so is_ours knows it.
start_memcached() {
    local dir=$STATE/memcached port tls_port
    port=$(free_port)
    tls_port=$(free_port)
    launch memcached "$dir/log" "${AS_SVC[@]}" memcached -U 0 -m 128 -c 4096 \
        -Z -o "ssl_chain_cert=$STATE/tls/server.crt,ssl_key=$STATE/tls/server.key" \
        -l "notls:127.0.0.1:$port" -l "127.0.0.1:$tls_port"
    wait_ready memcached "$dir/log" python3 -c '
import socket, sys
s = socket.create_connection(("127.0.0.1", int(sys.argv[1])), timeout=1)
s.sendall(b"version\r\n")
sys.exit(0 if s.recv(100).startswith(b"VERSION") else 1)' "$port"
    write_fragment memcached "LOADRIG_MEMCACHED_PORT=$port" \
        "LOADRIG_MEMCACHED_URL=memcached://127.0.0.1:$port" "LOADRIG_MEMCACHED_TLS_PORT=$tls_port" \
        "LOADRIG_MEMCACHED_TLS_URL=memcacheds://127.0.0.1:$tls_port?ca=$STATE/tls/ca.crt"
}

# --- commands --------------------------------------------------------------

need_root() { [[ $(id -u) == 0 ]] || die "'$1' needs root (packages, a system user)"; }

check_state_dir() {
    # Guards the rm -rf in `down` against a mistyped LOADRIG_SERVICES_DIR.
    if [[ -e $STATE && ! -e $STATE/.loadrig-services ]]; then
        die "$STATE exists but was not made by this script; set LOADRIG_SERVICES_DIR"
    fi
}

cmd_up() {
    local svc want=()
    (($#)) || set -- "${ALL[@]}"
    for svc in "$@"; do
        case $svc in
        postgres | postgresql | pg) want+=(postgres) ;;
        mariadb | mysql) want+=(mariadb) ;;
        redis) want+=(redis) ;;
        redis-open) want+=(redis-open) ;;
        slapd | ldap) want+=(slapd) ;;
        nginx | http) want+=(nginx) ;;
        etcd | grpc) want+=(etcd) ;;
        memcached) want+=(memcached) ;;
        *) usage ;;
        esac
    done
    need_root up
    check_state_dir
    mkdir -p "$STATE"
    chmod 711 "$STATE" # the service user passes through, nobody lists it
    touch "$STATE/.loadrig-services"
    install_missing "${want[@]}"
    ensure_user
    make_tls
    cd "$STATE" # servers inherit a working directory their user can stand in
    for svc in "${want[@]}"; do
        if running_pid "$svc" >/dev/null; then
            say "$svc: already running"
            continue
        fi
        # A dir without a live server is left over from a crash: start afresh.
        if [[ -d $STATE/$svc ]]; then
            stop_svc "$svc"
            rm -rf "${STATE:?}/$svc"
        fi
        mkdir "$STATE/$svc"
        chown "$SVC_USER:$SVC_USER" "$STATE/$svc"
        say "$svc: starting"
        "start_$svc"
        write_env
        say "$svc: up"
    done
    say "ready; eval \"\$($0 env)\" to use them"
}

cmd_down() {
    local svc
    need_root down
    [[ -d $STATE ]] || {
        say "nothing to stop ($STATE does not exist)"
        return 0
    }
    check_state_dir
    for svc in "${ALL[@]}"; do
        if [[ -d $STATE/$svc ]]; then stop_svc "$svc"; fi
    done
    rm -rf "$STATE"
}

svc_name() { # alias -> the service's name, or usage
    case $1 in
    postgres | postgresql | pg) echo postgres ;;
    mariadb | mysql) echo mariadb ;;
    redis) echo redis ;;
    redis-open) echo redis-open ;;
    slapd | ldap) echo slapd ;;
    nginx | http) echo nginx ;;
    etcd | grpc) echo etcd ;;
    memcached) echo memcached ;;
    *) usage ;;
    esac
}

# The same server again: its recorded command, so the same port, data and password.
cmd_restart() { # svc
    local svc launch probe old i
    (($# == 1)) || usage
    svc=$(svc_name "$1")
    need_root restart
    check_state_dir
    [[ -r $STATE/$svc/launch.cmd ]] || die "$svc was never started in $STATE; run '$0 up $svc'"
    if running_pid "$svc" >/dev/null; then stop_svc "$svc"; fi
    # A killed server stays a zombie until it is reaped, and PostgreSQL refuses to start
    # while the pid in its lock file exists at all.
    old=$(cat "$STATE/$svc/pid")
    for ((i = 0; i < WAIT_SECONDS * 10; i++)); do
        [[ -e /proc/$old ]] || break
        sleep 0.1
    done
    # What a killed server left behind (PostgreSQL backends) would hold its shared memory.
    sweep "$svc"
    launch=$(cat "$STATE/$svc/launch.cmd")
    probe=$(cat "$STATE/$svc/probe.cmd")
    cd "$STATE"
    eval "launch $svc $STATE/$svc/log $launch"
    eval "wait_ready $svc $STATE/$svc/log $probe"
    write_env
    say "$svc: restarted"
}

cmd_pid() { # svc
    (($# == 1)) || usage
    running_pid "$(svc_name "$1")" || die "$1 is not running"
}

cmd_env() {
    [[ -r $STATE/env ]] || die "no servers started; run '$0 up' first"
    cat "$STATE/env"
}

cmd_status() {
    local svc pid port
    for svc in "${ALL[@]}"; do
        if pid=$(running_pid "$svc"); then
            port=$(grep -so '_PORT=[0-9]*' "$STATE/$svc/env" | head -n1 | cut -d= -f2) || true
            printf '%-10s up    pid %-8s port %s\n' "$svc" "$pid" "$port"
        else
            printf '%-10s down\n' "$svc"
        fi
    done
}

case ${1:-} in
up) cmd_up "${@:2}" ;;
down) cmd_down ;;
env) cmd_env ;;
status) cmd_status ;;
restart) cmd_restart "${@:2}" ;;
pid) cmd_pid "${@:2}" ;;
*) usage ;;
esac
