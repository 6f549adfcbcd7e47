# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The connection and fan-out options every redfish_* module shares.

Keep in step with plugins/doc_fragments/redfish.py (the documentation of these options).
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["CONNECTION_KEYS", "redfish_argument_spec", "module_kwargs", "node_list"]

CONNECTION_KEYS = ("username", "password", "auth", "validate_certs", "ca_path", "timeout",
                   "retries", "system_id")

_NODE_SPEC = dict(
    name=dict(type="str"),
    baseuri=dict(type="str", required=True),
    username=dict(type="str"),
    password=dict(type="str", no_log=True),
    system_id=dict(type="str"),
    ca_path=dict(type="path"),
    validate_certs=dict(type="bool"),
)


def redfish_argument_spec(**extra):
    """Argument spec of the shared options plus the module's own ``extra`` options."""
    spec = dict(
        baseuri=dict(type="str"),
        username=dict(type="str", aliases=["user"]),
        password=dict(type="str", no_log=True),
        auth=dict(type="str", default="auto", choices=["auto", "session", "basic"]),
        validate_certs=dict(type="bool", default=True),
        ca_path=dict(type="path"),
        timeout=dict(type="int", default=10),
        retries=dict(type="int", default=3),
        system_id=dict(type="str"),
        nodes=dict(type="list", elements="dict", options=_NODE_SPEC),
        workers=dict(type="int", default=50),
        max_failed_percent=dict(type="float", default=0.0),
    )
    spec.update(extra)
    return spec


def module_kwargs(**extra):
    """Keyword arguments for AnsibleModule: spec, one target form, check mode."""
    return dict(argument_spec=redfish_argument_spec(**extra),
                required_one_of=[["baseuri", "nodes"]],
                mutually_exclusive=[["baseuri", "nodes"]],
                supports_check_mode=True)


def node_list(params):
    """Normalised nodes: each with its own connection values, top-level values as defaults."""
    defaults = dict((k, params.get(k)) for k in CONNECTION_KEYS)
    raw = params.get("nodes") or [dict(baseuri=params["baseuri"])]
    nodes = []
    for entry in raw:
        node = dict(defaults)
        node.update((k, v) for k, v in entry.items() if v is not None)
        node["name"] = entry.get("name") or node["baseuri"]
        nodes.append(node)
    return nodes
