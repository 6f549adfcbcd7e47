"""The Molecule tests' check that every test file of a scenario ran: the test count of a
scenario's tests/ folder and the passed count of testinfra's summary line."""
from tests.integration.roles.molecule_support import passed_count, scenario_test_count


def _scenario(tmp_path, files):
    tests = tmp_path / "roles" / "demo" / "molecule" / "default" / "tests"
    tests.mkdir(parents=True)
    for name, text in files.items():
        (tests / name).write_text(text, encoding="utf-8")
    return str(tmp_path)


def test_counts_test_functions_of_every_test_file(tmp_path):
    root = _scenario(tmp_path, {
        "test_default.py": "testinfra_hosts = ['n']\n\n\ndef test_a(host):\n    pass\n\n\ndef test_b(host):\n    pass\n",
        "test_node_labels.py": "def test_c(host):\n    def test_inner():\n        pass\n",
        "conftest.py": "def test_not_collected():\n    pass\n",
        "helpers.py": "def test_not_a_test_file():\n    pass\n",
    })
    assert scenario_test_count("demo", "default", root=root) == 3


def test_a_scenario_without_test_files_counts_zero(tmp_path):
    assert scenario_test_count("demo", "default", root=_scenario(tmp_path, {"README": "no tests"})) == 0


def test_passed_count_reads_the_last_summary_line():
    out = ("============ 4 passed in 2.00s ============\n"
           "INFO     [default > verify] Executing Testinfra tests\n"
           "============================== 15 passed in 9.12s ==============================\n")
    assert passed_count(out) == 15


def test_passed_count_with_failures_reads_the_passed_part():
    assert passed_count("======= 1 failed, 14 passed in 9.12s =======") is None
    assert passed_count("======= 14 passed, 1 warning in 9.12s =======") == 14


def test_no_summary_line_is_none():
    assert passed_count("============ no tests ran in 0.01s ============") is None
