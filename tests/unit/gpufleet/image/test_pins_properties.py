"""Bad pin files at volume (hypothesis): a shipped pin file with one value replaced, a key
removed or added anywhere in its tree, or replaced by arbitrary text or bytes. Every input
either validates or raises PinError naming the file and the field (or the YAML line);
never another exception. The counts go to docs/reliability.md ("Bad input")."""
import os

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from gpufleet.image import pins as pins_mod
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import PinError
from tests.helpers import ROOT
from tests.yaml_mutations import VALUES, key_paths, mutate

VERSIONS = os.path.join(ROOT, "packer", "versions")
EXAMPLES = 400
TRIED = {"tree": 0, "text": 0, "bytes": 0}


def _base(version):
    with open(os.path.join(VERSIONS, "%s.yml" % version)) as handle:
        return yaml.safe_load(handle)


BASES = dict((v, _base(v)) for v in pins_mod.list_versions(VERSIONS))


def _check(text, path, names):
    try:
        pins = pins_mod.parse_pins(text, path)
    except PinError as exc:
        message = str(exc)
        assert path in message, message
        assert any(str(name) in message for name in names) or "YAML" in message or "top level" in message, \
            (names, message)
        return
    assert pins.version == os.path.basename(path)[:-4] and pins.packages


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.data())
def test_one_changed_field_is_refused_naming_it_or_accepted(data):
    version = data.draw(st.sampled_from(sorted(BASES)))
    base = BASES[version]
    path = data.draw(st.sampled_from(key_paths(base)))
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    mutated = mutate(base, path, action, data.draw(VALUES))
    TRIED["tree"] += 1
    names = [p for p in path if isinstance(p, str)] + ["zz_unexpected", "sorted", "component", "package"]
    _check(yaml.safe_dump(mutated, sort_keys=False), os.path.join(VERSIONS, version + ".yml"), names)


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.text(max_size=300))
def test_arbitrary_text_never_raises_anything_but_pin_error(text):
    TRIED["text"] += 1
    _check(text, "/pins/lab.yml", list(pins_mod.TOP_KEYS) + ["mapping", "line"])


@settings(max_examples=EXAMPLES, deadline=None)
@given(st.binary(max_size=200))
def test_arbitrary_bytes_in_a_pin_file_are_refused_naming_the_file(tmp_path_factory, raw):
    folder = tmp_path_factory.mktemp("pins")
    with open(os.path.join(str(folder), "lab.yml"), "wb") as handle:
        handle.write(raw)
    TRIED["bytes"] += 1
    try:
        pins_mod.load_pins(str(folder), "lab")
    except PinError as exc:
        assert os.path.join(str(folder), "lab.yml") in str(exc)


def test_report_how_many_inputs_were_tried():
    """Runs last in this file: the counts quoted in docs/reliability.md."""
    print("pin inputs tried: %s" % TRIED)
    assert sum(TRIED.values()) >= EXAMPLES  # the property tests above really ran
