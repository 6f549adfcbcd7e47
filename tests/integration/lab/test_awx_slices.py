"""AWX job slicing against one PostgreSQL ledger, on the lab.

AWX runs a sliced job template as N jobs, slice k getting every N-th host of the inventory
(round-robin). Here two `gpufleet run bringup` processes (each its own ansible-runner and
ansible-playbook) bring up their slices of the 8 lab nodes at the same time, recording into
one PostgreSQL ledger. Afterwards: every node joined exactly once, by its own slice; each
node's sequence is 1..N with no gap or duplicate; the ledger's own consistency check finds
nothing; and the database password appears in no artifact the runs wrote.
"""
import glob
import os
import secrets
import subprocess
from urllib.parse import urlsplit, urlunsplit

import pytest

from tests.helpers import ROOT
# the lifecycle module's fixture: a fresh lab for this module too (module scope)
from tests.integration.lab.test_lab_lifecycle import GPUFLEET, NODES, lab  # noqa: F401

pytestmark = [pytest.mark.integration, pytest.mark.slow]
SLICES = 2


def _split_url(url):
    """(URL without the password, the password): the password travels in the environment."""
    parts = urlsplit(url)
    netloc = "%s@%s:%s" % (parts.username, parts.hostname, parts.port or 5432)
    return urlunsplit((parts.scheme, netloc, parts.path, "", "")), parts.password


@pytest.fixture(scope="module")
def ledger_db():
    base = os.environ.get("GPUFLEET_TEST_PG_URL")
    if not base:
        if os.environ.get("GPUFLEET_CI"):
            pytest.fail("GPUFLEET_TEST_PG_URL is not set: scripts/ci-postgres.sh starts PostgreSQL for this test")
        pytest.skip("GPUFLEET_TEST_PG_URL is not set (export it from scripts/ci-postgres.sh)")
    import psycopg
    name = "gpufleet_slices_" + secrets.token_hex(4)
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("CREATE DATABASE %s" % name)
    url, password = _split_url(base)
    yield url.rsplit("/", 1)[0] + "/" + name, password
    with psycopg.connect(base, autocommit=True) as conn:
        conn.execute("DROP DATABASE IF EXISTS %s WITH (FORCE)" % name)


def test_sliced_bringups_share_one_postgresql_ledger(lab, ledger_db, tmp_path):
    url, password = ledger_db
    slices = [NODES[k::SLICES] for k in range(SLICES)]  # AWX's round-robin slicing
    env = dict(os.environ, GPUFLEET_LEDGER_PASSWORD=password)
    runs = []
    for k, hosts in enumerate(slices):
        run_id = "ci-slice-%d-%s" % (k + 1, secrets.token_hex(3))
        args = [GPUFLEET, "run", "bringup", "--lab", "--run-id", run_id, "-l", ",".join(hosts),
                "-e", "gpufleet_ledger=" + url, "-e", "gpufleet_report_dir=" + str(tmp_path / "reports")]
        log = open(tmp_path / ("%s.log" % run_id), "w")
        runs.append((run_id, hosts, subprocess.Popen(args, cwd=ROOT, env=env, stdout=log, stderr=subprocess.STDOUT)))
    for run_id, _hosts, proc in runs:
        assert proc.wait(timeout=1800) == 0, (tmp_path / ("%s.log" % run_id)).read_text()[-4000:]

    import psycopg
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
    from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger_admin import check

    book = Ledger(url, password=password)
    try:
        assert check(book) == []
        current = dict((r["node"], r["state"]) for r in book.nodes())
    finally:
        book.close()
    assert current == dict((n, "joined") for n in NODES)
    with psycopg.connect(url, password=password) as conn:
        rows = conn.execute("SELECT node, seq, to_state, run_id FROM transitions ORDER BY node, seq").fetchall()
    owner = dict((node, run_id) for run_id, hosts, _p in runs for node in hosts)
    for node in NODES:
        mine = [r for r in rows if r[0] == node]
        assert [r[1] for r in mine] == list(range(1, len(mine) + 1)), mine
        assert [r[2] for r in mine].count("joined") == 1, mine
        assert {r[3] for r in mine} == {owner[node]}, mine  # no slice touched another's node
    leaked = [p for run_id, _h, _p in runs for p in glob.glob(os.path.join(ROOT, "build", "runs", run_id, "**"),
                                                                recursive=True)
              if os.path.isfile(p) and password.encode() in open(p, "rb").read()]
    assert not leaked, "the ledger password was written to %s" % leaked
