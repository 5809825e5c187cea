#!/usr/bin/env bash
# A throwaway PostgreSQL for the tests of rein-postgres (docs/POSTGRES.md, "Tests").
#
#   scripts/pg-test-cluster.sh start   start it (idempotent), print nothing secret
#   scripts/pg-test-cluster.sh url     print the connection URL the tests use
#   scripts/pg-test-cluster.sh restart restart the server (a test of what a restart breaks)
#   scripts/pg-test-cluster.sh stop    stop it and delete its data
#
# Debian's `postgresql` is installed if no server is found (as root). The cluster lives in a
# fresh temporary directory under /tmp, which the `postgres` user can reach (a checkout under
# /root is not), listens on a unix socket in that directory only (no TCP port to collide
# with another cluster on the machine), and requires scram-sha-256 with generated passwords,
# so the tests exercise real credential handling. Run as root, the server runs as the
# `postgres` user; run as anyone else, as that user. Where it lives is recorded under
# target/pg/ (the URL in a file only its owner can read), so `url` and `stop` find it.
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

secret() { head -c 24 /dev/urandom | od -An -tx1 | tr -d ' \n'; }

running() {
    [ -f "$STATE/cluster" ] || return 1
    # shellcheck disable=SC1091
    . "$STATE/cluster"
    [ -d "$PGTMP/data" ] && as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" status >/dev/null 2>&1
}

start() {
    if running; then return 0; fi
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
    # Unix socket only, in the cluster's own directory; fsync off: a throwaway cluster for
    # correctness tests, never for durability benchmarks.
    as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/log" -w -t 60 \
        -o "-c listen_addresses='' -k $PGTMP -c fsync=off -c max_connections=200" start >/dev/null \
        || die "the server did not start; see $PGTMP/log"
    chmod 711 "$PGTMP" # clients of any user reach the socket; the data stays 700
    PGPASSWORD="$superuser_password" psql -X -q -v ON_ERROR_STOP=1 -h "$PGTMP" -U postgres -d postgres \
        -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$role_password'" \
        -c "CREATE DATABASE $DB OWNER $ROLE" >/dev/null \
        || die "creating the $ROLE role failed; see $PGTMP/log"
    mkdir -p "$STATE"
    (umask 077
        printf 'PGTMP=%q\nPGBIN=%q\n' "$PGTMP" "$PGBIN" >"$STATE/cluster"
        # The socket directory as the URL's host, percent-encoded (libpq's form).
        printf 'postgres://%s:%s@%s/%s\n' "$ROLE" "$role_password" "${PGTMP//\//%2F}" "$DB" >"$STATE/url")
    echo "pg-test-cluster: PostgreSQL $("$PGBIN/postgres" --version | awk '{print $3}') on the socket in $PGTMP (url: scripts/pg-test-cluster.sh url)" >&2
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

case "${1:-}" in
    start) start ;;
    url) running || die "no test cluster is running; run make pg-start (or scripts/pg-test-cluster.sh start)"; cat "$STATE/url" ;;
    restart)
        running || die "no test cluster is running; run make pg-start (or scripts/pg-test-cluster.sh start)"
        as_owner "$PGBIN/pg_ctl" -D "$PGTMP/data" -l "$PGTMP/log" -m fast -w -t 60 restart >/dev/null \
            || die "the server did not restart; see $PGTMP/log"
        ;;
    stop) stop ;;
    *) die "usage: $0 start|url|restart|stop" ;;
esac
