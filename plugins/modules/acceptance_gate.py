#!/usr/bin/python
# -*- coding: utf-8 -*-
# Copyright: gpufleet.baremetal developers
# GNU General Public License v3.0+ (see https://www.gnu.org/licenses/gpl-3.0.txt)
from __future__ import absolute_import, division, print_function

__metaclass__ = type

DOCUMENTATION = r"""
---
module: acceptance_gate
short_description: Prove a GPU node fit for work with phased, thresholded checks
version_added: 0.1.0
description:
  - Runs on the node. Phases run in order, cheapest first - C(attestation), C(gpu), C(nvlink),
    C(fabric), C(storage), C(reference), C(soak) - and stop at the first failed check unless
    O(run_all=true). Checks not reached are reported as C(skip).
  - Each check runs a tool, saves its raw output, parses it and judges the number against the
    threshold profile. A missing tool, an empty or unparseable output or a timeout fails the
    check with the reason (fail closed). Bandwidth checks retry up to the profile's C(retries).
  - Writes C(<report_dir>/<report_id>/report.json), C(junit.xml), C(summary.txt), C(inputs.json),
    C(raw/<probe>.txt) and a copy of the report as C(<report_dir>/latest.json), which the
    C(cluster_join) role reads before it resumes a node.
  - The task fails when the verdict is C(fail) (unless O(fail_on_verdict=false)); the message
    names the failed phase, check and reason.
author:
  - gpufleet.baremetal developers (@gpufleet)
attributes:
  check_mode:
    support: full
    description: No tool runs and nothing is written; the result lists the probes that would run, in order.
  diff_mode:
    support: full
    description: Shows the previous and the new report id and verdict from C(latest.json).
options:
  profile:
    description:
      - The threshold profile. Either the mapping of a C(profiles/gate/<sku>.yml) file loaded on the
        controller (for example with C(lookup('file', ...) | from_yaml)), or the path of a profile
        file on the node (needs PyYAML on the node).
      - Validated before anything runs; an invalid profile fails the task with the key to fix.
    type: raw
    required: true
  phases:
    description:
      - Phases to run, always in the gate's order. All phases but V(health) when omitted.
      - V(health) is the short idle health check (the checks of the profile's C(health) section, XID, ECC, row
        remapping, DCGM level 1), run alone on a node in service by the day-2 controller.
    type: list
    elements: str
    choices: [attestation, gpu, nvlink, fabric, storage, reference, soak, health]
  run_all:
    description: Keep running after a failed check, to collect every failure in one report.
    type: bool
    default: false
  expected_release:
    description:
      - Values the node's O(image_release_path) must hold, taken by the controller from the verified,
        signed image manifest, for example C(VERSION), C(BUILD_ID) and C(PINS_SHA256).
      - Must include C(VERSION); without it the C(image_release) check fails.
    type: dict
  image_release_path:
    description: The image release file written by the image build (os-release style C(KEY="value") lines).
    type: path
    default: /etc/gpufleet/image-release
  firmware_inventory:
    description:
      - The node's firmware inventory as returned by M(gpufleet.baremetal.redfish_info), a list of
        C(id), C(name), C(version) and C(updateable). Judged against the profile's C(firmware_pins).
    type: list
    elements: dict
  tpm_quote:
    description:
      - Also quote the node's TPM 2.0 over O(tpm_quote.pcrs) with a nonce (tpm2-tools 5.x on the node) in the
        attestation phase. The C(tpm_quote) check passes only when C(tpm2_checkquote) verifies the signature and
        nonce and every expected PCR value matches.
      - The report keeps the quote and the attestation key's public PEM, so the controller can also verify the
        quote against an AK it enrolled.
    type: dict
    suboptions:
      pcrs:
        description: PCR selection in tpm2-tools syntax.
        type: str
        default: sha256:0,1,2,7
      nonce:
        description: Fresh hex nonce chosen by the controller for this run. A random one is made on the node when omitted.
        type: str
      expected_pcrs:
        description: Expected values, PCR index (or C(bank:index)) to hex digest.
        type: dict
        required: true
      tcti:
        description: TCTI for the tpm2 tools (passed as C(-T)), for example C(swtpm:host=127.0.0.1,port=2321). The tools' default when omitted.
        type: str
  peers:
    description:
      - Other nodes of the fabric test set. This node is the leader; it runs the multi-node NCCL test
        for the whole set through O(fabric_launcher) and targets the first peer with iperf3.
      - Without peers, a profile's C(nccl_multi_node) check fails closed; on the other members of the set
        waive it with O(skip_checks) (the leader's report proves the set).
    type: list
    elements: str
    default: []
  skip_checks:
    description:
      - Profile checks to waive on this run. They are reported with verdict C(skip) and the reason
        C(waived by the caller), never measured and never counted as passed.
      - A name the profile does not have fails the task (typo protection).
    type: list
    elements: str
    default: []
  hcas:
    description: RDMA devices to test with C(ib_write_bw). Every device in C(/sys/class/infiniband) when empty.
    type: list
    elements: str
    default: []
  fabric_launcher:
    description: Command and options that start the multi-node NCCL test; C(-H), C(-np) and the test follow.
    type: list
    elements: str
    default: [mpirun, --allow-run-as-root]
  tool_paths:
    description: Absolute path per tool name (C(nvidia-smi), C(dcgmi), C(nvbandwidth), C(all_reduce_perf), ...).
    type: dict
    default: {}
  path_dirs:
    description: Folders searched for tools before E(PATH).
    type: list
    elements: path
    default: []
  report_dir:
    description: Folder that holds one sub-folder per report and C(latest.json).
    type: path
    default: /var/lib/gpufleet/gate
  storage_dir:
    description: Folder the fio checks write their test file to (on the storage to qualify).
    type: path
    default: /var/tmp/gpufleet-gate
  timeouts:
    description: Seconds per probe name (for example C(gpu_burn) or C(dcgm_diag)); overrides O(default_timeout).
    type: dict
    default: {}
  default_timeout:
    description: Seconds a probe may run before it is killed and its checks fail.
    type: int
    default: 600
  node:
    description: Node name used in the report id and as the fabric leader's host name. The host name when omitted.
    type: str
  fail_on_verdict:
    description: Fail the task when the verdict is C(fail). With C(false) the result carries the verdict instead.
    type: bool
    default: true
notes:
  - Raw outputs keep the names C(raw/<probe>.txt) (C(raw/ib_write_bw.<hca>.txt) per HCA), so
    C(gpufleet gate evaluate --profile P --results <report folder>) can re-judge them against any profile.
  - In the lab, O(path_dirs) points at the lab's hardware shims; no production path refers to them.
seealso:
  - module: gpufleet.baremetal.redfish_info
"""

EXAMPLES = r"""
- name: Run the acceptance gate with the H100 profile
  gpufleet.baremetal.acceptance_gate:
    profile: "{{ lookup('ansible.builtin.file', 'profiles/gate/h100-sxm-8x.yml') | from_yaml }}"
    expected_release:
      VERSION: "{{ image_manifest.version }}"
      BUILD_ID: "{{ image_manifest.build_id }}"
      PINS_SHA256: "{{ image_manifest.pins_sha256 }}"
    firmware_inventory: "{{ bmc_info.firmware }}"
  register: gate

- name: Run only the GPU phase and collect every failure
  gpufleet.baremetal.acceptance_gate:
    profile: /etc/gpufleet/profiles/h100-sxm-8x.yml
    phases: [gpu]
    run_all: true
    fail_on_verdict: false
  register: gpu_gate

- name: Test the fabric of a set of nodes; the first node of the set leads
  gpufleet.baremetal.acceptance_gate:
    profile: "{{ gate_profile }}"
    phases: [fabric]
    peers: "{{ (groups['rack42'] | difference([inventory_hostname])) if inventory_hostname == groups['rack42'][0] else [] }}"
    skip_checks: "{{ [] if inventory_hostname == groups['rack42'][0] else ['nccl_multi_node'] }}"
    hcas: [mlx5_0, mlx5_1]
"""

RETURN = r"""
verdict:
  description: C(pass) or C(fail); C(null) in check mode.
  returned: always
  type: str
  sample: pass
report_id:
  description: Id of the report, C(<node>-<UTC time>-<random>).
  returned: when not in check mode
  type: str
  sample: node-r42-07-20260601T101500Z-3fa2c1
report_path:
  description: Folder holding report.json, junit.xml, summary.txt, inputs.json and raw/.
  returned: when not in check mode
  type: str
  sample: /var/lib/gpufleet/gate/node-r42-07-20260601T101500Z-3fa2c1
failed_phase:
  description: The first phase with a failed check, or C(null).
  returned: when not in check mode
  type: str
  sample: nvlink
failed_check:
  description: The first failed check, or C(null).
  returned: when not in check mode
  type: str
  sample: nvbandwidth_d2d
reason:
  description: Why the first failed check failed (measured value, threshold, item), or an empty string.
  returned: when not in check mode
  type: str
  sample: "nvbandwidth_d2d: 92.54 GB/s (worst: GPU0->GPU2) is below the floor of 300 GB/s"
summary:
  description: The short text table of every check.
  returned: when not in check mode
  type: str
report:
  description: The full report (the content of report.json), with C(phases) listing every check's
    measured value, threshold, unit, verdict, reason, attempts and raw file names.
  returned: when not in check mode
  type: dict
plan:
  description: Phases and probes that would run, in order, with their commands.
  returned: in check mode
  type: list
  elements: dict
profile:
  description: Name of the profile.
  returned: in check mode
  type: str
node:
  description: Node name.
  returned: in check mode
  type: str
"""

from ansible.module_utils.basic import AnsibleModule

from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.gate.gate_run import argument_spec, execute


def main():
    module = AnsibleModule(argument_spec=argument_spec(), supports_check_mode=True)
    try:
        result = execute(module.params, check_mode=module.check_mode)
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    except (IOError, OSError) as exc:
        module.fail_json(msg="Acceptance gate could not write its report under %s: %s. Check that the folder is "
                             "writable by the connecting user." % (module.params["report_dir"], exc))
    diff = result.pop("diff")
    if module._diff:
        result["diff"] = diff
    if result["verdict"] == "fail" and module.params["fail_on_verdict"]:
        module.fail_json(msg="Acceptance gate failed for node %s at phase %s, check %s: %s (report %s)" % (
            result["report"]["node"], result["failed_phase"], result["failed_check"], result["reason"],
            result["report_path"]), **result)
    module.exit_json(**result)


if __name__ == "__main__":
    main()
