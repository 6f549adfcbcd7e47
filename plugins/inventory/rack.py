# -*- coding: utf-8 -*-
# Copyright (c) gpufleet.baremetal contributors
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
name: rack
short_description: Hosts and per-node variables from a compact rack description
version_added: 0.1.0
description:
  - Reads a YAML rack description (fleet defaults, fabric rails and subnets, SKUs, racks with
    slots and BMC endpoints) and yields one host per populated slot.
  - Per host it sets the hostname from C(hostname_pattern) in O(fleet), the BMC address and system id,
    one RDMA address per rail computed deterministically from rack index, slot and rail subnet,
    the SKU (GPU count and type, features), the image version and the acceptance gate profile.
  - Groups are C(gpufleet), C(rack_<name>) and C(sku_<name>); C(compose), C(groups) and
    C(keyed_groups) add more.
  - Duplicate hostnames, BMC endpoints or addresses, overlapping subnets, a slot out of range,
    an unknown SKU or a missing field fail with an error naming the entry.
  - The file name must end in C(.rack.yml) or C(.rack.yaml). It is read with a strict YAML reader
    (no duplicate keys, bounded aliases and nesting, UTF-8 only); an empty file, unknown top-level
    keys or a description without hosts are errors.
  - A node's BMC address comes from the most specific level (node, rack, fleet) that sets
    C(bmc.address) or C(bmc.network); an explicit address is never replaced by a derived one.
  - Set C(any_unparsed_is_failed = True) in the C([inventory]) section of C(ansible.cfg) so that
    an invalid description stops the run instead of leaving an empty inventory.
extends_documentation_fragment:
  - ansible.builtin.constructed
options:
  plugin:
    description: Marks the file as a rack description for this plugin.
    type: str
    required: true
    choices: [gpufleet.baremetal.rack]
  allow_plaintext_credentials:
    description:
      - Accept a BMC password written inline instead of a variable reference such as
        C({{ vault_bmc_password }}). Off by default; meant for throwaway labs only.
    type: bool
    default: false
  fleet:
    description:
      - Fleet defaults. Keys C(hostname_pattern) (required; placeholders C({rack}), C({rack_index}),
        C({slot}), each with at most a width such as C({slot:02d})), C(domain), C(image_version)
        (required), C(sku), C(bmc) (C(address) pattern or C(network), not both on one level,
        C(scheme), C(port), C(system_id), C(validate_certs), C(credentials) with C(username) and
        C(password)) and C(host_vars).
    type: dict
    required: true
  fabric:
    description:
      - RDMA fabric. Keys C(mode) (C(roce) or C(ib)), C(mtu), C(rack_stride) (addresses reserved per
        rack on each rail, default 64) and C(rails), a list of C(name), C(subnet) and optional
        C(mtu) and C(mode).
    type: dict
    required: true
  skus:
    description:
      - Node types by name. Keys C(gpu_count), C(gpu_type), C(rails) (subset of the fabric's rails),
        C(features) and C(gate_profile) (defaults to the SKU name).
    type: dict
    required: true
  racks:
    description:
      - Racks. Keys C(name), C(index) (unique, drives addresses), C(slots), C(sku), C(bmc),
        C(image_version), C(host_vars) and C(nodes) (a list of C(slot) with optional C(sku), C(bmc),
        C(rails) (per rail C(mac), C(pci_path) or C(interface)), C(host_vars); or C(all)).
    type: list
    elements: dict
    required: true
notes:
  - See docs/inventory.md in the collection for the addressing rule and the full schema.
"""

EXAMPLES = r"""
# inventories/lab.rack.yml
plugin: gpufleet.baremetal.rack
fleet:
  hostname_pattern: "{rack}n{slot:02d}"
  domain: lab.gpufleet.test
  image_version: "2026.06.2"
  bmc:
    address: "https://127.0.20.{rack_index}:8443"
    system_id: "{hostname}"
    credentials:
      username: "{{ vault_gpufleet_bmc_username }}"
      password: "{{ vault_gpufleet_bmc_password }}"
fabric:
  mode: roce
  rails:
    - {name: rail0, subnet: 10.200.0.0/16}
    - {name: rail1, subnet: 10.201.0.0/16}
skus:
  lab: {gpu_count: 0, features: [lab]}
racks:
  - {name: r01, index: 1, slots: 4, sku: lab, nodes: all}
"""

from ansible.errors import AnsibleError, AnsibleParserError
from ansible.plugins.inventory import BaseInventoryPlugin, Constructable

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.rack import build_hosts, load_description

try:
    from ansible.template import trust_as_template
except ImportError:  # ansible-core before 2.19 has no template trust
    trust_as_template = None


def _trusted(value):
    """``value`` with every string trusted for templating, as Ansible's loader marks a config file."""
    if trust_as_template is None:
        return value
    if isinstance(value, dict):
        return dict((key, _trusted(item)) for key, item in value.items())
    if isinstance(value, list):
        return [_trusted(item) for item in value]
    return trust_as_template(value) if isinstance(value, str) else value


class InventoryModule(BaseInventoryPlugin, Constructable):
    NAME = "gpufleet.baremetal.rack"
    # The description is a local file the operator wrote, like a config file read by
    # _read_config_data: its host vars (the vault references) may be templated.
    trusted_by_default = True

    def verify_file(self, path):
        return super(InventoryModule, self).verify_file(path) and path.endswith((".rack.yml", ".rack.yaml"))

    def parse(self, inventory, loader, path, cache=True):
        super(InventoryModule, self).parse(inventory, loader, path, cache)
        try:
            desc = load_description(path)
            self._set_options_from(desc)
            hosts = build_hosts(desc, self.get_option("allow_plaintext_credentials"))
        except RackDescriptionError as exc:
            raise AnsibleParserError("%s: %s" % (path, exc.msg))
        strict = self.get_option("strict")
        self.inventory.add_group("gpufleet")
        for host in hosts:
            self._add_host(host, strict)

    def _set_options_from(self, desc):
        """What _read_config_data does after its (lenient) load: check ``plugin``, set options."""
        names = getattr(self, "_redirected_names", None) or [self.NAME]
        if desc.get("plugin") not in names:
            raise RackDescriptionError("plugin", "%r is not this plugin" % (desc.get("plugin"),),
                                       "Start the file with: plugin: %s" % self.NAME)
        try:
            self.set_options(direct=_trusted(desc), var_options=self._vars)
        except AnsibleError as exc:  # an option of the wrong type, e.g. compose as a list
            raise RackDescriptionError("(top level)", str(exc).rstrip("."), "Correct that option (see docs/inventory.md).")
        unknown = sorted(str(key) for key in desc if key not in self._options)
        if unknown:  # a misspelt option would otherwise be dropped without a word
            raise RackDescriptionError("(top level)", "unknown keys %s" % ", ".join(unknown),
                                       "Use only: %s." % ", ".join(sorted(self._options)))

    def _add_host(self, host, strict):
        name = host["name"]
        self.inventory.add_host(name, group="gpufleet")
        for group in host["groups"]:
            self.inventory.add_group(group)
            self.inventory.add_child(group, name)
        for key, value in host["vars"].items():
            self.inventory.set_variable(name, key, value)
        self._set_composite_vars(self.get_option("compose"), host["vars"], name, strict=strict)
        self._add_host_to_composed_groups(self.get_option("groups"), host["vars"], name, strict=strict)
        self._add_host_to_keyed_groups(self.get_option("keyed_groups"), host["vars"], name, strict=strict)
