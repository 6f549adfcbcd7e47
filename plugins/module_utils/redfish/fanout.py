# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Run one Redfish operation on many BMCs with a bounded worker pool.

Each node gets its own client (own session, own connections), so one slow or failing BMC
never blocks or fails the others. The task fails only when the share of failed nodes is
above ``max_failed_percent`` (0 = any failure fails).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

from concurrent.futures import ThreadPoolExecutor

from ansible.module_utils.basic import missing_required_lib

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.argspec import node_list
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.client import (
    HAS_REQUESTS, REQUESTS_IMPORT_ERROR, RedfishClient, RetryPolicy,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import RedfishError
from ansible_collections.gpufleet.baremetal.plugins.module_utils.errors import GpufleetError

__all__ = ["client_for", "run_node", "run_fleet", "module_result", "run_module", "FleetFailed"]


class FleetFailed(RedfishError):
    """More nodes failed than the failure policy allows."""


def client_for(node, transport_factory=None):
    transport = transport_factory(node) if transport_factory else None
    return RedfishClient(
        node["baseuri"], username=node.get("username"), password=node.get("password"),
        auth=node.get("auth") or "auto", validate_certs=node.get("validate_certs", True),
        ca_path=node.get("ca_path"), timeout=node.get("timeout") or 10,
        retry=RetryPolicy(retries=node.get("retries", 3)), node=node["name"], transport=transport)


def run_node(node, operation, transport_factory=None):
    """``operation(client, node)`` on one node; errors become the entry's ``error``."""
    entry = dict(name=node["name"], changed=False, failed=False, error=None)
    try:
        with client_for(node, transport_factory) as client:
            entry.update(operation(client, node))
    except GpufleetError as exc:
        entry.update(failed=True, error=exc.msg)
    except Exception as exc:  # fail closed: an unexpected error fails this node, not the fleet
        entry.update(failed=True, error="Node %s: unexpected %s: %s"
                     % (node["name"], type(exc).__name__, exc))
    return entry


def run_fleet(nodes, operation, workers=50, max_failed_percent=0.0, transport_factory=None):
    """Run on every node; return ``{changed, nodes, failed_nodes, summary}`` or raise FleetFailed."""
    workers = max(1, min(workers, len(nodes)))
    with ThreadPoolExecutor(max_workers=workers) as pool:
        entries = list(pool.map(lambda n: run_node(n, operation, transport_factory), nodes))
    failed = [e for e in entries if e["failed"]]
    result = dict(
        changed=any(e["changed"] for e in entries),
        nodes=entries,
        failed_nodes=[e["name"] for e in failed],
        summary=dict(total=len(entries), failed=len(failed),
                     changed=sum(1 for e in entries if e["changed"])),
    )
    percent = 100.0 * len(failed) / len(entries) if entries else 0.0
    if failed and (len(entries) == 1 or percent > max_failed_percent):
        raise FleetFailed(_failure_message(failed, len(entries), percent, max_failed_percent),
                          **result)
    return result


def _failure_message(failed, total, percent, allowed):
    if total == 1:
        return failed[0]["error"]
    lines = "; ".join(e["error"] for e in failed[:20])
    more = " (and %d more)" % (len(failed) - 20) if len(failed) > 20 else ""
    return ("%d of %d nodes failed (%.1f%% > max_failed_percent %s): %s%s"
            % (len(failed), total, percent, allowed, lines, more))


def module_result(params, operation, diff_of=None, transport_factory=None):
    """Run ``operation`` for a module's params; return ``(result, warnings)``.

    The single-node case (``baseuri``) also has the node's fields at the top level.

    ``diff_of(entry)`` returns ``(before, after)`` for one node's diff; the diff is keyed
    by node name. Raises FleetFailed (with every node's entry) per the failure policy.
    """
    result = run_fleet(node_list(params), operation, params.get("workers") or 50,
                       params.get("max_failed_percent") or 0.0, transport_factory)
    if diff_of is not None:
        pairs = dict((e["name"], diff_of(e)) for e in result["nodes"] if not e["failed"])
        result["diff"] = dict(before=dict((k, v[0]) for k, v in pairs.items()),
                              after=dict((k, v[1]) for k, v in pairs.items()))
    notes = [w for e in result["nodes"] for w in e.pop("warnings", None) or []]
    if params.get("baseuri"):
        single = dict(result["nodes"][0])
        for key in ("name", "failed", "error"):
            single.pop(key, None)
        result.update(single)
    return result, notes


def run_module(module, operation, diff_of=None):
    """The end of every redfish_* module: run ``operation`` per node, warn, exit or fail.

    ``diff_of`` is used only when Ansible asked for a diff (``--diff``).
    """
    if not HAS_REQUESTS:
        module.fail_json(msg=missing_required_lib("requests"), exception=str(REQUESTS_IMPORT_ERROR))
    try:
        result, notes = module_result(module.params, operation,
                                      diff_of=diff_of if module._diff else None)
    except GpufleetError as exc:
        module.fail_json(**exc.to_fail_kwargs())
    for note in notes:
        module.warn(note)
    module.exit_json(**result)
