"""Hostname, FQDN and /etc/hosts entries are set from the inventory's variables."""


def test_hostname_file(host):
    assert host.file("/etc/hostname").content_string == "lab-r1n2\n"


def test_fqdn_resolves_locally(host):
    assert host.check_output("getent hosts lab-r1n2.lab.gpufleet.test").split() == [
        "127.0.1.1", "lab-r1n2.lab.gpufleet.test", "lab-r1n2"]


def test_extra_host_entry(host):
    assert host.check_output("getent hosts ctl").split()[0] == "10.200.0.1"


def test_managed_block_is_written_once(host):
    hosts = host.file("/etc/hosts").content_string
    assert hosts.count("# BEGIN gpufleet.baremetal.node_identity") == 1
    assert "localhost" in hosts  # docker's own entries survive
