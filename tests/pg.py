"""A throwaway PostgreSQL schema per test, from GPUFLEET_TEST_PG_URL.

``scripts/ci-postgres.sh`` installs and starts Debian's PostgreSQL and prints the URL.
Locally a missing URL skips the PostgreSQL tests; in CI (GPUFLEET_CI=1) it fails them.
"""
import contextlib
import os
import uuid

import pytest

from tests.helpers import need

PG_URL_VAR = "GPUFLEET_TEST_PG_URL"


def pg_url():
    """The admin URL of the test database (skips or fails when it is not set)."""
    url = os.environ.get(PG_URL_VAR)
    need(bool(url), "%s is not set (export it from scripts/ci-postgres.sh)" % PG_URL_VAR)
    return url


def _with_schema(url, schema):
    # libpq's ``options`` sets search_path for every connection made from this URL.
    joiner = "&" if "?" in url else "?"
    return "%s%soptions=-csearch_path%%3D%s" % (url, joiner, schema)


@contextlib.contextmanager
def pg_schema():
    """A URL whose connections use a new, empty schema; the schema is dropped afterwards."""
    import psycopg

    url = pg_url()
    schema = "t_" + uuid.uuid4().hex[:12]
    with psycopg.connect(url, autocommit=True) as conn:
        conn.execute("CREATE SCHEMA %s" % schema)
    try:
        yield _with_schema(url, schema)
    finally:
        with psycopg.connect(url, autocommit=True) as conn:
            conn.execute("DROP SCHEMA %s CASCADE" % schema)


@contextlib.contextmanager
def ledger_location(backend, tmp_path, name="ledger.sqlite"):
    """A fresh ledger location for ``backend`` ("sqlite" or "postgresql")."""
    if backend == "sqlite":
        yield str(tmp_path / name)
        return
    with pg_schema() as url:
        yield url


@pytest.fixture(params=["sqlite", "postgresql"])
def ledger_url(request, tmp_path):
    """A fresh, empty ledger location: an SQLite file path or a PostgreSQL URL."""
    with ledger_location(request.param, tmp_path) as location:
        yield location
