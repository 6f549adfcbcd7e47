"""lab/k8s/kubeadm_sim (the lab's `kubeadm join` SIMULATION): argument rules, JoinConfiguration
validation, and that the cluster_join role's template renders a configuration it accepts for both
kubeadm.k8s.io/v1beta3 and v1beta4. No sockets: discovery is not exercised here (Molecule does)."""
import importlib.machinery
import importlib.util
import json
import os

import jinja2
import pytest
import yaml

from tests.helpers import ROOT

TEMPLATE = os.path.join(ROOT, "roles", "cluster_join", "templates", "etc", "kubernetes", "gpufleet-join.yaml.j2")
TOKEN = "abcdef.0123456789abcdef"
HASH = "sha256:" + "0f" * 32


def _load_sim():
    path = os.path.join(ROOT, "lab", "k8s", "kubeadm_sim")
    loader = importlib.machinery.SourceFileLoader("gpufleet_kubeadm_sim", path)
    spec = importlib.util.spec_from_loader(loader.name, loader)
    module = importlib.util.module_from_spec(spec)
    loader.exec_module(module)
    return module


SIM = _load_sim()


def render(version, extra_args=None, **overrides):
    env = jinja2.Environment(undefined=jinja2.StrictUndefined, trim_blocks=True, lstrip_blocks=False)
    env.filters["to_json"] = json.dumps
    with open(TEMPLATE, encoding="utf-8") as handle:
        template = env.from_string(handle.read())
    values = {"ansible_managed": "Ansible managed", "cluster_join_k8s_kubeadm_api_version": version,
              "cluster_join_k8s_api_endpoint": "k8s-api:6443", "cluster_join_k8s_token": TOKEN,
              "cluster_join_k8s_ca_cert_hash": HASH, "cluster_join_k8s_node_name": "node01",
              "cluster_join_k8s_startup_taint_key": "gpufleet.io/unvalidated",
              "cluster_join_k8s_kubelet_extra_args": extra_args or {}}
    values.update(overrides)
    return template.render(**values)


def _write(tmp_path, text):
    path = tmp_path / "join.yaml"
    path.write_text(text)
    return str(path)


@pytest.mark.parametrize("version", ["kubeadm.k8s.io/v1beta3", "kubeadm.k8s.io/v1beta4"])
@pytest.mark.parametrize("extra", [{}, {"node-labels": "gpufleet.io/pool=a", "max-pods": 64}])
def test_role_template_is_accepted(tmp_path, version, extra):
    config = SIM.load_config(_write(tmp_path, render(version, extra)))
    assert config["nodeRegistration"]["taints"] == [{"key": "gpufleet.io/unvalidated", "effect": "NoSchedule"}]
    assert SIM.kubelet_args(config, version) == {k: str(v) for k, v in extra.items()}


def test_v1beta4_renders_kubelet_args_as_a_name_value_list(tmp_path):
    config = yaml.safe_load(render("kubeadm.k8s.io/v1beta4", {"node-labels": "a=b"}))
    assert config["nodeRegistration"]["kubeletExtraArgs"] == [{"name": "node-labels", "value": "a=b"}]


BASE = {"apiVersion": "kubeadm.k8s.io/v1beta4", "kind": "JoinConfiguration",
        "discovery": {"bootstrapToken": {"apiServerEndpoint": "k8s-api:6443", "token": TOKEN, "caCertHashes": [HASH]}},
        "nodeRegistration": {"name": "node01", "taints": [{"key": "t", "effect": "NoSchedule"}]}}


def _with(path, value):
    config = json.loads(json.dumps(BASE))
    target = config
    for key in path[:-1]:
        target = target[key]
    if value is None:
        del target[path[-1]]
    else:
        target[path[-1]] = value
    return config


@pytest.mark.parametrize("config, message", [
    (_with(("discovery", "bootstrapToken", "token"), "abc.def"), "the bootstrap token is invalid"),
    (_with(("discovery", "bootstrapToken", "token"), "ABCDEF.0123456789abcdef"), "the bootstrap token is invalid"),
    (_with(("discovery", "bootstrapToken", "caCertHashes"), ["sha256:1234"]), 'invalid hash "sha256:1234"'),
    (_with(("discovery", "bootstrapToken", "caCertHashes"), None), "without caCertHashes can be unsafe"),
    (_with(("discovery", "bootstrapToken", "apiServerEndpoint"), None), "apiServerEndpoint: Required value"),
    (_with(("discovery", "bootstrapToken", "apiServerEndpoint"), "https://k8s-api"), "expected host:port"),
    (_with(("nodeRegistration", "taints"), [{"key": "t", "effect": "Never"}]), 'Unsupported value: "Never"'),
    (_with(("nodeRegistration", "taints"), [{"effect": "NoSchedule"}]), "taints[0].key: Required value"),
    (_with(("nodeRegistration", "kubeletExtraArgs"), {"max-pods": "64"}), "v1beta4 takes a list"),
    (_with(("nodeRegistration", "name"), "Node_01"), "nodeRegistration.name: Invalid value"),
    (_with(("nodeRegistration", "taint"), []), 'unknown field "nodeRegistration.taint"'),
    (_with(("discovery", "timeout"), "5m"), 'unknown field "discovery.timeout"'),  # v1beta3 only
    (_with(("apiVersion",), "kubeadm.k8s.io/v1beta2"), 'no kind "JoinConfiguration" is registered'),
    (_with(("kind",), "InitConfiguration"), "expected exactly one JoinConfiguration, found 0"),
])
def test_invalid_configurations_fail_like_kubeadm(tmp_path, config, message):
    with pytest.raises(SIM.JoinError) as info:
        SIM.load_config(_write(tmp_path, yaml.safe_dump(config)))
    assert message in str(info.value)


@pytest.mark.parametrize("endpoint", ["k8s-api:6443", "10.0.0.1:6443", "[fd00::1]:6443"])
def test_endpoints_accepted(tmp_path, endpoint):
    config = _with(("discovery", "bootstrapToken", "apiServerEndpoint"), endpoint)
    assert SIM.load_config(_write(tmp_path, yaml.safe_dump(config)))["discovery"]["bootstrapToken"]["apiServerEndpoint"] == endpoint


def test_v1beta3_takes_a_map_and_a_discovery_timeout(tmp_path):
    config = _with(("apiVersion",), "kubeadm.k8s.io/v1beta3")
    config["discovery"]["timeout"] = "5m0s"
    config["nodeRegistration"]["kubeletExtraArgs"] = {"max-pods": "64"}
    assert SIM.load_config(_write(tmp_path, yaml.safe_dump(config)))["discovery"]["timeout"] == "5m0s"


@pytest.mark.parametrize("argv, message", [
    (["join", "--config", "x.yaml", "--token", TOKEN], "can not mix '--config' with arguments ['token']"),
    (["join", "k8s-api:6443", "--config", "x.yaml"], "can not mix '--config'"),
    (["join", "--config"], "flag needs an argument: --config"),
    (["join", "--config", "x.yaml", "--frobnicate"], "unknown flag: --frobnicate"),
    (["init"], "unknown command 'init'"),
    (["join", "--control-plane", "--config", "x.yaml"], "worker nodes only"),
])
def test_argument_rules(argv, message):
    with pytest.raises(SIM.JoinError) as info:
        SIM.parse_args(argv)
    assert message in str(info.value)


def test_config_may_carry_the_dry_run_and_preflight_flags():
    assert SIM.parse_args(["join", "--config=x.yaml", "--dry-run", "--v=5"])["--config"] == "x.yaml"


def test_spki_hash_matches_the_lab_pki(tmp_path):
    import ssl
    from lab.k8s.k8s_pki import ensure_pki
    paths, values = ensure_pki(str(tmp_path / "pki"))
    with open(paths["ca.crt"], encoding="utf-8") as handle:
        der = ssl.PEM_cert_to_DER_cert(handle.read())
    assert "sha256:" + SIM._spki_sha256(der) == values["ca-cert-hash"]  # pylint: disable=protected-access
