"""contrib/prometheus/gpufleet-alerts.yml: promtool's own checks when it is installed; without
it, the file's structure and every metric it names against the metrics the controller exports."""
import os
import re
import shutil
import subprocess

from ansible_collections.gpufleet.baremetal.plugins.module_utils import strict_yaml
from gpufleet.controller.liveness import NAMES as LIVENESS
from gpufleet.view.metric_values import METRICS
from tests.helpers import need_tool

ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), "..", "..", "..", ".."))
RULES = os.path.join(ROOT, "contrib", "prometheus", "gpufleet-alerts.yml")
RULE_TESTS = os.path.join(ROOT, "contrib", "prometheus", "gpufleet-alerts.test.yml")
PROMTOOL = shutil.which("promtool")
WANTED = {"GpufleetControllerStalled", "GpufleetNodeStuckProvisioning", "GpufleetBreakFixGrowing",
          "GpufleetPaidNotSchedulableHigh"}
_NAME = re.compile(r"\b(gpufleet_[a-z0-9_]+)(\{[^}]*\})?")
_LABEL = re.compile(r"([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)")
_DURATION = re.compile(r"^\d+[smhd]$")


def exported():
    """{metric name as scraped: label names} from the code's own registries of names."""
    names = {}
    for name, (kind, _help, labels) in METRICS.items():
        names[name + "_total" if kind == "counter" else name] = set(labels)
    for name in LIVENESS:
        names[name] = None     # labels not checked for these (build_info's are the version's)
        if name.endswith("_seconds") and "duration" in name:
            for suffix in ("_bucket", "_count", "_sum"):
                names[name + suffix] = {"le"} if suffix == "_bucket" else set()
    return names


def rules():
    doc = strict_yaml.load_file(RULES)
    return [rule for group in doc["groups"] for rule in group["rules"]]


def test_the_file_has_groups_of_complete_alert_rules():
    doc = strict_yaml.load_file(RULES)
    assert set(doc) == {"groups"} and doc["groups"]
    for group in doc["groups"]:
        assert set(group) == {"name", "rules"} and group["rules"], group.get("name")
    for rule in rules():
        assert set(rule) <= {"alert", "expr", "for", "labels", "annotations"}, rule
        assert re.match(r"^Gpufleet[A-Za-z]+$", rule["alert"]) and rule["expr"].strip(), rule
        assert _DURATION.match(rule.get("for", "0s")), rule["alert"]
        assert rule["labels"]["severity"] in ("warning", "critical"), rule["alert"]
        assert rule["annotations"]["summary"] and rule["annotations"]["description"], rule["alert"]
    assert WANTED <= {r["alert"] for r in rules()}


def test_every_metric_an_expression_uses_is_one_the_controller_exports():
    names = exported()
    for rule in rules():
        used = _NAME.findall(rule["expr"])
        assert used, rule["alert"]
        for name, matchers in used:
            assert name in names, "%s uses %s, which the controller does not export" % (rule["alert"], name)
            if matchers and names[name] is not None:
                unknown = set(_LABEL.findall(matchers)) - names[name]
                assert not unknown, "%s: %s has no label %s" % (rule["alert"], name, sorted(unknown))


def test_the_checker_itself_catches_an_unknown_metric():
    assert "gpufleet_nodes_stuck" not in exported() and "gpufleet_decisions_total" in exported()


def test_promtool_checks_and_unit_tests_the_rules():
    # a skip only outside CI (scripts/bootstrap-host.sh installs it); the checks above still ran
    need_tool("promtool")
    check = subprocess.run([PROMTOOL, "check", "rules", RULES], capture_output=True, text=True, timeout=120)
    assert check.returncode == 0, check.stdout + check.stderr
    run = subprocess.run([PROMTOOL, "test", "rules", RULE_TESTS], capture_output=True, text=True, timeout=300,
                         cwd=os.path.dirname(RULE_TESTS))
    assert run.returncode == 0, run.stdout + run.stderr


def test_the_promtool_test_file_covers_every_alert():
    doc = strict_yaml.load_file(RULE_TESTS)
    assert doc["rule_files"] == ["gpufleet-alerts.yml"]
    tested = {case["alertname"] for test in doc["tests"] for case in test["alert_rule_test"]}
    assert tested == {r["alert"] for r in rules()}
