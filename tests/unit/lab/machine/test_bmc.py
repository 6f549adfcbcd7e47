"""The lab machine's BMC: the emulator's config, the media pool, the one-time override watcher."""
import ast
import logging
import xml.etree.ElementTree as ET

import pytest

from lab.machine import bmc
from lab.machine.domain import boot_override, domain_xml


def test_the_emulator_config_names_one_domain_tls_auth_pool_and_the_media_ca():
    text = bmc.sushy_config(8443, "/p/server.pem", "/p/server.key", "/p/htpasswd", "uuid-1", "pool-1", "/p/ca.pem")
    settings = {}
    exec(compile(ast.parse(text), "sushy.conf", "exec"), {}, settings)  # as Flask's from_pyfile reads it
    assert settings["SUSHY_EMULATOR_LISTEN_IP"] == "127.0.0.1" and settings["SUSHY_EMULATOR_LISTEN_PORT"] == 8443
    assert settings["SUSHY_EMULATOR_SSL_CERT"] == "/p/server.pem"
    assert settings["SUSHY_EMULATOR_SSL_KEY"] == "/p/server.key"
    assert settings["SUSHY_EMULATOR_AUTH_FILE"] == "/p/htpasswd"
    assert settings["SUSHY_EMULATOR_ALLOWED_INSTANCES"] == ["uuid-1"]
    assert settings["SUSHY_EMULATOR_STORAGE_POOL"] == "pool-1"
    assert settings["SUSHY_EMULATOR_VMEDIA_VERIFY_SSL"] == "/p/ca.pem"
    assert settings["SUSHY_EMULATOR_LIBVIRT_URI"] == "qemu:///system"


def test_a_quote_in_a_path_stays_a_string():
    text = bmc.sushy_config(1, "/p/it's.pem", "k", "a", "u", "p", "c")
    settings = {}
    exec(text, {}, settings)
    assert settings["SUSHY_EMULATOR_SSL_CERT"] == "/p/it's.pem"


def test_the_media_pool_is_a_directory_pool():
    pool = ET.fromstring(bmc.pool_xml("m1-media", "/srv/m1/media"))
    assert pool.get("type") == "dir" and pool.findtext("name") == "m1-media"
    assert pool.findtext("target/path") == "/srv/m1/media"


class _Domain:
    """The few libvirt domain calls the watcher makes, on an XML held in memory."""

    def __init__(self, xml, active=True):
        self.xml = xml
        self.active = active
        self.calls = []

    def XMLDesc(self, flags):
        return self.xml

    def connect(self):
        return self

    def defineXML(self, xml):
        self.calls.append("define")
        self.xml = xml

    def isActive(self):
        return self.active

    def destroy(self):
        self.calls.append("destroy")
        self.active = False

    def create(self):
        self.calls.append("create")
        self.active = True


class _Libvirt:
    VIR_DOMAIN_XML_INACTIVE = 2


def _cd_first():
    tree = ET.fromstring(domain_xml("gpufleet-lab-m1", "u", "/d", "/n", "/c"))
    ET.SubElement(tree.find("devices/disk"), "boot", {"order": "1"})
    return ET.tostring(tree, encoding="unicode")


def test_a_start_consumes_the_override_for_the_next_boot():
    dom = _Domain(_cd_first())
    watcher = bmc.OnceWatcher("gpufleet-lab-m1")
    watcher.handle(dom, "started", _Libvirt)
    assert dom.calls == ["define"] and boot_override(dom.xml) == []
    assert "consumed" in watcher.log[0][1]


def test_a_start_without_an_override_changes_nothing():
    dom = _Domain(domain_xml("gpufleet-lab-m1", "u", "/d", "/n", "/c"))
    watcher = bmc.OnceWatcher("gpufleet-lab-m1")
    watcher.handle(dom, "started", _Libvirt)
    assert dom.calls == [] and watcher.log == []


def test_a_guest_reboot_starts_the_machine_again_on_its_stored_configuration():
    dom = _Domain(_cd_first())
    watcher = bmc.OnceWatcher("gpufleet-lab-m1")
    watcher.handle(dom, "reboot", _Libvirt)
    assert dom.calls == ["destroy", "create"] and dom.active


def _settings():
    text = bmc.sushy_config(1, "c", "k", "a", "u", "p", "ca")
    settings = {}
    exec(text, {}, settings)
    return settings


def test_the_emulator_knows_which_variable_store_means_secure_boot_on():
    settings = _settings()
    assert settings["SUSHY_EMULATOR_SECURE_BOOT_ENABLED_NVRAM"] == "/usr/share/OVMF/OVMF_VARS_4M.ms.fd"
    assert settings["SUSHY_EMULATOR_SECURE_BOOT_DISABLED_NVRAM"] == "/usr/share/OVMF/OVMF_VARS_4M.fd"
    assert settings["SUSHY_EMULATOR_BOOT_LOADER_MAP"]["UEFI"]["x86_64"] == "/usr/share/OVMF/OVMF_CODE_4M.secboot.fd"


@pytest.mark.parametrize("secure, uuid", [(True, "8b3f0c2e-6d0a-4b7e-9a51-2f4c1d9e7a21"),
                                          (False, "8b3f0c2e-6d0a-4b7e-9a51-2f4c1d9e7a22")])
def test_sushy_tools_libvirt_driver_reports_the_domains_secure_boot(secure, uuid):
    """sushy-tools' own driver reads our domain XML (libvirt's in-process test driver, no daemon):
    what its Redfish SecureBoot resource answers as SecureBootEnable."""
    libvirt = pytest.importorskip("libvirt")
    drivers = pytest.importorskip("sushy_tools.emulator.resources.systems.libvirtdriver")
    conn = libvirt.open("test:///default")
    conn.defineXML(domain_xml("gpufleet-lab-sb-%s" % secure, uuid, "/srv/m/nvme0.raw", "/srv/m/VARS.fd",
                              "/srv/m/console.log", secure_boot=secure))
    # a subclass: initialize() sets class attributes, which must not leak into other tests
    driver_cls = type("Driver", (drivers.LibvirtDriver,), {})
    driver = driver_cls.initialize(_settings(), logging.getLogger("sushy"), "test:///default")()
    try:
        assert driver.get_boot_mode(uuid) == "UEFI"
        assert driver.get_secure_boot(uuid) is secure
    finally:
        conn.lookupByUUIDString(uuid).undefine()
        conn.close()
