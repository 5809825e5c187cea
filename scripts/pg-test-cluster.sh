#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests of rein-postgres (docs/POSTGRES.md, "Tests").
#
#   scripts/pg-test-cluster.sh start   start it (idempotent), print nothing secret
#   scripts/pg-test-cluster.sh url     print the connection URL the tests use (the unix socket)
#   scripts/pg-test-cluster.sh tls-url print the URL over TCP with TLS (sslmode=verify-full,
#                                      sslrootcert the cluster's own certificate authority)
#   scripts/pg-test-cluster.sh ca      print the path of that certificate authority (PEM)
#   scripts/pg-test-cluster.sh restart restart the server (a test of what a restart breaks)
#   scripts/pg-test-cluster.sh stop    stop it and delete its data
#
# Debian's `postgresql` is installed if no server is found (as root). The cluster lives in a
# fresh temporary directory under /tmp, which the `postgres` user can reach (a checkout under
# /root is not), listens on a unix socket in that directory, and requires scram-sha-256 with
# generated passwords, so the tests exercise real credential handling. It also listens on a
# free port of 127.0.0.1 for TLS only (pg_hba has `hostssl` lines and no `host` line: a TCP
# connection without TLS is refused, so a test that connects over TCP proves TLS was used),
# with a certificate authority and a server certificate for `localhost` (not 127.0.0.1)
# generated on start. Run as root, the server runs as the `postgres` user; run as anyone
# else, as that user. Where it lives is recorded under target/pg/ (the URLs in files only
# its owner can read), so `url` and `stop` find it.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."
STATE="$(pwd)/target/pg"
DB=rein
ROLE=rein

die() { echo "pg-test-cluster: $*" >&2; exit 1; }

pgbin() {
    local dir
    dir=$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -1 || true)
    if [ -z "$dir" ] && command -v pg_ctl >/dev/null && command -v initdb >/dev/null; then
        dir=$(dirname "$(command -v pg_ctl)")
    fi
    echo "$dir"
}

install_postgres() {
    [ "$(id -u)" = 0 ] || die "no PostgreSQL server found; install Debian's postgresql (apt-get install postgresql) or run this as root"
    echo "pg-test-cluster: installing Debian's postgresql" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends postgresql >/dev/null
}

# Runs a server program as the cluster's owner: `postgres` when we are root (the server
# refuses to run as root), ourselves otherwise.
as_owner() {
    if [ "$(id -u)" = 0 ]; then runuser -u postgres -- "$@"; else "$@"; fi
}

install_openssl() {
    [ "$(id -u)" = 0 ] || die "the openssl command is missing; install Debian's openssl (apt-get install openssl) or run this as root"
    echo "pg-test-cluster: installing Debian's openssl" >&2
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends openssl >/dev/null
}

# A certificate authority and a server certificate it signed for `localhost` only, in $1:
# ca.crt, server.crt, server.key (the CA's key is deleted once it signed). EC P-256 keys:
# generated in a few milliseconds. Valid for a week, longer than any cluster lives.
make_certificates() {
    local dir=$1
    mkdir -p "$dir"
    (umask 077
        openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -days 7 \
            -subj "/CN=rein test cluster CA" -addext "basicConstraints=critical,CA:TRUE" \
            -addext "keyUsage=critical,keyCertSign,cRLSign" \
            -keyout "$dir/ca.key" -out "$dir/ca.crt" 2>/dev/null
        openssl req -new -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -subj "/CN=localhost" \
            -keyout "$dir/server.key" -out "$dir/server.csr" 2>/dev/null
        printf '%s\n' "subjectAltName=DNS:localhost" "basicConstraints=critical,CA:FALSE" \
            "keyUsage=critical,digitalSignature" "extendedKeyUsage=serverAuth" >"$dir/server.ext"
        openssl x509 -req -in "$dir/server.csr" -CA "$dir/ca.crt" -CAkey "$dir/ca.key" \
            -set_serial "$RANDOM$RANDOM$RANDOM" -days 7 -extfile "$dir/server.ext" \
            -out "$dir/server.crt" 2>/dev/null
    ) || die "generating the test certificates with openssl failed"
    rm -f "$dir/ca.key" "$dir/server.csr" "$dir/server.ext"
    chmod 644 "$dir/ca.crt" "$dir/server.crt"
}

# A TCP port of 127.0.0.1 nothing listens on (clusters of other checkouts included).
free_port() {
    local port _
    for _ in $(seq 1 200); do
        port=$((20000 + RANDOM % 40000))
        if ! (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
            echo "$port"
            return 0
        fi
    done
    die "found no free TCP port on 127.0.0.1"
}

# What a URL's query value cannot hold as it is.
url_escape() { local v=${1//%/%25}; v=${v//&/%26}; v=${v// /%20}; v=${v//#/%23}; printf '%s' "$v"; }

secret() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

running() {
    [ -f "$STATE/cluster" ] || return 1
    # shellcheck disable=SC1091
    . "$STATE/cluster"
    [ -d "$PGTMP/data" ] && as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" status >/dev/null 2>&1
}

start() {
    if running; then
        [ -f "$STATE/tls-url" ] || echo "pg-test-cluster: the running cluster has no TLS (an older script started it); for the TLS tests run make pg-stop, then make pg-start" >&2
        return 0
    fi
    rm -rf "$STATE"
    PGBIN=$(pgbin)
    if [ -z "$PGBIN" ]; then install_postgres; PGBIN=$(pgbin); fi
    [ -n "$PGBIN" ] || die "PostgreSQL was installed but no initdb was found under /usr/lib/postgresql"
    PGTMP=$(mktemp -d /tmp/rein-pg.XXXXXX)
    chmod 700 "$PGTMP"
    if [ "$(id -u)" = 0 ]; then
        id postgres >/dev/null 2>&1 || die "the postgres user is missing; reinstall Debian's postgresql"
        chown postgres: "$PGTMP"
    fi
    local superuser_password role_password
    superuser_password=$(secret)
    role_password=$(secret)
    (umask 077 && printf '%s\n' "$superuser_password" >"$PGTMP/pwfile")
    [ "$(id -u)" = 0 ] && chown postgres: "$PGTMP/pwfile"
    as_owner "$PGBIN/initdb" -D "$PGTMP/data" -U postgres --pwfile="$PGTMP/pwfile" \
        -A scram-sha-256 -E UTF8 --no-locale --no-sync >"$PGTMP/initdb.log" 2>&1 \
        || die "initdb failed; see $PGTMP/initdb.log"
    rm -f "$PGTMP/pwfile"
    command -v openssl >/dev/null || install_openssl
    make_certificates "$PGTMP/tls"
    # The unix socket as before; over TCP, TLS only: no `host` line, so a connection
    # without TLS is refused (the TLS tests rely on it).
    printf '%s\n' \
        "local   all all              scram-sha-256" \
        "hostssl all all 127.0.0.1/32 scram-sha-256" \
        "hostssl all all ::1/128      scram-sha-256" >"$PGTMP/data/pg_hba.conf"
    [ "$(id -u)" = 0 ] && chown -R postgres: "$PGTMP/tls" "$PGTMP/data/pg_hba.conf"
    local port
    port=$(free_port)
    # The socket in the cluster's own directory, and a free port of 127.0.0.1 with TLS. fsync
    # off by default: a throwaway cluster for correctness tests; REIN_PG_FSYNC=on for a
    # benchmark of durable writes (`make bench-pg PG_FSYNC=on`), where a commit waits for
    # its WAL to reach the disk as in production.
    local fsync="${REIN_PG_FSYNC:-off}"
    case "$fsync" in on | off) ;; *) die "REIN_PG_FSYNC must be on or off, not '$fsync'" ;; esac
    as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/log" -w -t 60 \
        -o "-c listen_addresses=127.0.0.1 -p $port -k $PGTMP -c fsync=$fsync -c max_connections=200 \
            -c ssl=on -c ssl_cert_file=$PGTMP/tls/server.crt -c ssl_key_file=$PGTMP/tls/server.key" \
        start >/dev/null \
        || die "the server did not start; see $PGTMP/log"
    chmod 711 "$PGTMP" # clients of any user reach the socket; the data stays 700
    PGPASSWORD="$superuser_password" psql -X -q -v ON_ERROR_STOP=1 -h "$PGTMP" -p "$port" -U postgres -d postgres \
        -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$role_password'" \
        -c "CREATE DATABASE $DB OWNER $ROLE" >/dev/null \
        || die "creating the $ROLE role failed; see $PGTMP/log"
    mkdir -p "$STATE"
    cp "$PGTMP/tls/ca.crt" "$STATE/ca.crt"
    (umask 077
        printf 'PGTMP=%q\nPGBIN=%q\n' "$PGTMP" "$PGBIN" >"$STATE/cluster"
        # The socket directory as the URL's host, percent-encoded (libpq's form); its port
        # names the socket file.
        printf 'postgres://%s:%s@%s:%s/%s\n' "$ROLE" "$role_password" "${PGTMP//\//%2F}" "$port" "$DB" >"$STATE/url"
        printf 'postgres://%s:%s@localhost:%s/%s?sslmode=verify-full&sslrootcert=%s\n' \
            "$ROLE" "$role_password" "$port" "$DB" "$(url_escape "$STATE/ca.crt")" >"$STATE/tls-url")
    echo "pg-test-cluster: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on the socket in $PGTMP and on localhost:$port with TLS (url: scripts/pg-test-cluster.sh url, tls-url)" >&2
}

stop() {
    if [ -f "$STATE/cluster" ]; then
        # shellcheck disable=SC1091
        . "$STATE/cluster"
        if [ -d "$PGTMP/data" ]; then
            as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" -m fast -w stop >/dev/null 2>&1 || true
        fi
        case "$PGTMP" in /tmp/rein-pg.*) rm -rf "$PGTMP" ;; esac
    fi
    rm -rf "$STATE"
}

require_running() {
    running || die "no test cluster is running; run make pg-start (or scripts/pg-test-cluster.sh start)"
}

case "${1:-}" in
    start) start ;;
    url) require_running; cat "$STATE/url" ;;
    tls-url)
        require_running
        [ -f "$STATE/tls-url" ] || die "the running cluster has no TLS (an older script started it); run make pg-stop, then make pg-start"
        cat "$STATE/tls-url"
        ;;
    ca) require_running; echo "$STATE/ca.crt" ;;
    restart)
        require_running
        as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/log" -m fast -w -t 60 restart >/dev/null \
            || die "the server did not restart; see $PGTMP/log"
        ;;
    stop) stop ;;
    *) die "usage: $0 start|url|tls-url|ca|restart|stop" ;;
esac
