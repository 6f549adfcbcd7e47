"""``gpufleet ledger migrate|copy|check`` on SQLite and PostgreSQL ledgers."""
import json

from gpufleet import main as cli_main

from ansible_collections.gpufleet.baremetal.plugins.module_utils.lifecycle.ledger import Ledger
from tests.pg import ledger_url  # noqa: F401  pylint: disable=unused-import  (fixture)
from tests.unit.plugins.module_utils.lifecycle.test_ledger_migrate import make_v1


def test_migrate_copy_check_round_trip(capsys, tmp_path, ledger_url):  # noqa: F811  pylint: disable=redefined-outer-name
    src = make_v1(str(tmp_path / "v1.sqlite"))
    assert cli_main.main(["ledger", "migrate", src]) == 0
    assert "from version 1 to 3" in capsys.readouterr().out
    assert cli_main.main(["ledger", "copy", src, ledger_url, "--json"]) == 0
    copied = json.loads(capsys.readouterr().out)
    assert copied["tables"]["transitions"]["rows"] == 2
    assert cli_main.main(["ledger", "check", ledger_url]) == 0
    assert "0 problem(s)" in capsys.readouterr().out
    assert cli_main.main(["ledger", "copy", src, ledger_url]) == 1  # destination not empty
    assert "not empty" in capsys.readouterr().err


def test_check_exits_1_naming_each_problem(capsys, tmp_path):
    path = str(tmp_path / "l.sqlite")
    book = Ledger(path)
    book.transition("n1", "enrolled", "t", "new")
    with book.transaction() as cur:
        cur.execute("UPDATE nodes SET seq = 5 WHERE node = 'n1'")
    book.close()
    assert cli_main.main(["ledger", "check", path]) == 1
    assert "node n1: current state enrolled (seq 5) differs" in capsys.readouterr().out
