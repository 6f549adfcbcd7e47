"""Changelog fragments are mappings of section -> list of strings (ansible-test sanity's
changelog check, which takes minutes; this one takes milliseconds). An unquoted ': ' inside a
line makes YAML read a mapping instead: it happened twice."""
import glob
import os

import yaml

from tests.helpers import ROOT

SECTIONS = {"major_changes", "minor_changes", "breaking_changes", "deprecated_features", "removed_features",
            "security_fixes", "bugfixes", "known_issues", "trivial", "release_summary"}


def test_every_fragment_is_sections_of_plain_strings():
    bad = []
    for path in sorted(glob.glob(os.path.join(ROOT, "changelogs", "fragments", "*.yml"))):
        with open(path) as handle:
            data = yaml.safe_load(handle)
        for section, items in (data or {}).items():
            if section not in SECTIONS:
                bad.append((path, section, "unknown section"))
            elif section == "release_summary":
                continue
            elif not isinstance(items, list) or not all(isinstance(i, str) for i in items):
                bad.append((path, section, "items must be strings (quote a line that holds ': ')"))
    assert not bad, bad
