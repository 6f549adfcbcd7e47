"""Bad lab configs at volume (hypothesis): lab/config/default.yml with one value replaced, a
key removed or added anywhere, or replaced by arbitrary text. ``gpufleet lab`` either loads
it or raises LabError naming the config file and the key; never a traceback.
The counts go to docs/reliability.md ("Bad input")."""
import os

import yaml
from hypothesis import HealthCheck, given, settings, strategies as st

from lab.twin import config as lab_config
from lab.twin.errors import LabError
from tests.yaml_mutations import UNEXPECTED_KEY, VALUES, key_paths, mutate

EXAMPLES = 400
TRIED = {"tree": 0, "text": 0}
with open(lab_config.DEFAULT_CONFIG) as _handle:
    BASE = yaml.safe_load(_handle)


def _load(tmp_path_factory, text):
    folder = str(tmp_path_factory.mktemp("labcfg"))
    path = os.path.join(folder, "lab.yml")
    with open(path, "w") as handle:
        handle.write(text)
    # state_dir in the temporary folder: a loaded config may create its secrets there
    return path, lambda: lab_config.load(path, state_dir=os.path.join(folder, "state"))


def _refused_naming(exc, path, names):
    message = exc.msg
    assert path in message, message
    assert any(str(n) in message for n in names), (names, message)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.too_slow,
                                                                       HealthCheck.function_scoped_fixture])
@given(st.data())
def test_one_changed_key_is_refused_naming_it_or_loaded(tmp_path_factory, data):
    key_path = data.draw(st.sampled_from([p for p in key_paths(BASE) if p[0] != "state_dir"]))
    action = data.draw(st.sampled_from(["replace", "delete", "add"]))
    text = yaml.safe_dump(mutate(BASE, key_path, action, data.draw(VALUES)), sort_keys=False)
    TRIED["tree"] += 1
    path, load = _load(tmp_path_factory, text)
    try:
        cfg = load()
    except LabError as exc:
        _refused_naming(exc, path, [k for k in key_path if isinstance(k, str)] + [UNEXPECTED_KEY])
        return
    assert cfg.nodes and all(n.name for n in cfg.nodes)


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.text(max_size=300))
def test_arbitrary_text_is_refused_naming_the_file(tmp_path_factory, text):
    TRIED["text"] += 1
    path, load = _load(tmp_path_factory, text)
    try:
        load()
    except LabError as exc:
        _refused_naming(exc, path, ["line", "position", "key", "mapping", "racks"] + list(BASE))
        return
    raise AssertionError("arbitrary text loaded as a lab config: %r" % text)


def test_report_how_many_inputs_were_tried():
    print("lab config inputs tried: %s" % TRIED)
    assert sum(TRIED.values()) >= EXAMPLES
