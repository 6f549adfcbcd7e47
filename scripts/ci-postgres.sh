#!/usr/bin/env bash
# Install (apt) and start Debian's PostgreSQL, create a role and a database for the ledger
# tests, and print the URL to export as GPUFLEET_TEST_PG_URL. Safe to re-run. Needs root (or sudo).
#   export GPUFLEET_TEST_PG_URL="$(scripts/ci-postgres.sh | tail -1)"
# The role's password is random per machine and kept in a 0600 file under /var/lib/postgresql
# so re-runs print the same URL; it is a throwaway test database, never a production one.
set -euo pipefail
SUDO=""
AS_POSTGRES=(runuser -u postgres --)
if [[ $(id -u) -ne 0 ]]; then SUDO="sudo"; AS_POSTGRES=(sudo -u postgres); fi
ROLE="${GPUFLEET_PG_ROLE:-gpufleet_test}"
DB="${GPUFLEET_PG_DB:-gpufleet_test}"
PORT="${GPUFLEET_PG_PORT:-5432}"
SECRET_FILE=/var/lib/postgresql/.gpufleet_test_password

if ! dpkg-query -W -f='${Status}' postgresql 2>/dev/null | grep -q "ok installed"; then
  echo "installing postgresql" >&2
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends postgresql >/dev/null
fi
VERSION=$(find /usr/lib/postgresql -mindepth 1 -maxdepth 1 -printf "%f\n" | sort -n | tail -1)
if ! pg_lsclusters -h | awk '{print $1, $2, $4}' | grep -q "^$VERSION main online"; then
  pg_lsclusters -h | grep -q "^$VERSION main" || $SUDO pg_createcluster "$VERSION" main >&2
  echo "starting postgresql $VERSION/main" >&2
  $SUDO pg_ctlcluster "$VERSION" main start
fi
for _ in $(seq 1 30); do "${AS_POSTGRES[@]}" pg_isready -q -p "$PORT" && break; sleep 1; done
"${AS_POSTGRES[@]}" pg_isready -q -p "$PORT" || { echo "postgresql did not become ready on port $PORT" >&2; exit 1; }

if ! $SUDO test -s "$SECRET_FILE"; then
  $SUDO sh -c "umask 077; head -c 18 /dev/urandom | base64 | tr -d '/+=' > $SECRET_FILE; chown postgres $SECRET_FILE"
fi
PASSWORD=$($SUDO cat "$SECRET_FILE")
psql_admin() { "${AS_POSTGRES[@]}" psql -p "$PORT" -v ON_ERROR_STOP=1 -qAt "$@"; }
if [[ -z $(psql_admin -c "SELECT 1 FROM pg_roles WHERE rolname = '$ROLE'") ]]; then
  psql_admin -c "CREATE ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'"
else
  psql_admin -c "ALTER ROLE $ROLE LOGIN CREATEDB PASSWORD '$PASSWORD'"
fi
if [[ -z $(psql_admin -c "SELECT 1 FROM pg_database WHERE datname = '$DB'") ]]; then
  psql_admin -c "CREATE DATABASE $DB OWNER $ROLE"
fi
echo "postgresql $VERSION ready: database $DB, role $ROLE on 127.0.0.1:$PORT" >&2
echo "postgresql://$ROLE:$PASSWORD@127.0.0.1:$PORT/$DB"
