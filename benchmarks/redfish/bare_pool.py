"""Methods (d)/(d3): a bare thread pool issuing, per node, the same HTTP calls the modules make.

(d) matches (a), redfish_provision: one session per node for all three steps. (d3) matches
(a3), three tasks: a session per step, each reading the root and the system again.
Also "d-min": the three state-changing calls alone (InsertMedia, PATCH Boot, Reset) with basic
auth and one keep-alive connection per worker: the least traffic this job can cost.
"""
import threading
from concurrent.futures import ThreadPoolExecutor

import requests

SESSIONS = "/redfish/v1/SessionService/Sessions"


class Node:
    """One node's session, as each module run opens it (own TLS connection, own token)."""

    def __init__(self, node, user, password, ca):
        self.base = "https://" + node["baseuri"]
        self.system = "/redfish/v1/Systems/" + node["system_id"]
        self.http = requests.Session()
        self.ca = ca
        rsp = self.call("POST", SESSIONS, {"UserName": user, "Password": password})
        self.token = rsp.headers["X-Auth-Token"]
        self.session_uri = rsp.headers["Location"]

    def call(self, method, path, body=None):
        headers = {"X-Auth-Token": self.token} if getattr(self, "token", None) else {}
        rsp = self.http.request(method, self.base + path, json=body, headers=headers,
                                verify=self.ca, timeout=30)
        if rsp.status_code >= 400:
            raise RuntimeError("%s %s: HTTP %d" % (method, path, rsp.status_code))
        return rsp

    def close(self):
        self.call("DELETE", self.session_uri)
        self.http.close()


def _insert_cd(n, image):
    """Read every device, insert into the CD one, read it back (as insert_media does)."""
    devices = [m["@odata.id"] for m in n.call("GET", n.system + "/VirtualMedia").json()["Members"]]
    docs = [n.call("GET", d).json() for d in devices]
    cd = [d for d in docs if "CD" in d["MediaTypes"]][0]
    n.call("POST", cd["Actions"]["#VirtualMedia.InsertMedia"]["target"],
           {"Image": image, "Inserted": True, "WriteProtected": True})
    n.call("GET", cd["@odata.id"])


def _vmedia(node, user, password, ca, image):
    n = Node(node, user, password, ca)
    n.call("GET", "/redfish/v1/")
    n.call("GET", n.system)
    _insert_cd(n, image)
    n.close()


def _boot(node, user, password, ca):
    n = Node(node, user, password, ca)
    n.call("GET", "/redfish/v1/")
    n.call("GET", n.system)
    n.call("PATCH", n.system, {"Boot": {"BootSourceOverrideTarget": "Pxe",
                                        "BootSourceOverrideEnabled": "Once"}})
    n.call("GET", n.system)
    n.close()


def _power(node, user, password, ca):
    n = Node(node, user, password, ca)
    n.call("GET", "/redfish/v1/")
    n.call("GET", n.system)
    n.call("POST", n.system + "/Actions/ComputerSystem.Reset", {"ResetType": "On"})
    n.call("GET", n.system)
    n.close()


def _provision(node, user, password, ca, image):
    """redfish_provision's calls: one session, root and system read once, each step read back."""
    n = Node(node, user, password, ca)
    n.call("GET", "/redfish/v1/")
    n.call("GET", n.system)
    _insert_cd(n, image)
    n.call("PATCH", n.system, {"Boot": {"BootSourceOverrideTarget": "Pxe",
                                        "BootSourceOverrideEnabled": "Once"}})
    n.call("GET", n.system)
    n.call("POST", n.system + "/Actions/ComputerSystem.Reset", {"ResetType": "On"})
    n.close()


def run_provision_calls(nodes, user, password, ca, image, workers):
    """(d): every node's whole job in one session, ``workers`` nodes at a time."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(lambda n: _provision(n, user, password, ca, image), nodes))


def run_same_calls(nodes, user, password, ca, image, workers):
    """(d3): three stages like the three module tasks, each over all nodes with ``workers`` threads."""
    with ThreadPoolExecutor(max_workers=workers) as pool:
        for stage in (lambda n: _vmedia(n, user, password, ca, image),
                      lambda n: _boot(n, user, password, ca),
                      lambda n: _power(n, user, password, ca)):
            list(pool.map(stage, nodes))


def run_minimal(nodes, user, password, ca, image, workers):
    local = threading.local()

    def one(node):
        http = getattr(local, "http", None)
        if http is None:
            http = local.http = requests.Session()
            http.auth = (user, password)
        base = "https://%s/redfish/v1/Systems/%s" % (node["baseuri"], node["system_id"])
        for method, path, body in (
                ("POST", "/VirtualMedia/Cd/Actions/VirtualMedia.InsertMedia",
                 {"Image": image, "Inserted": True}),
                ("PATCH", "", {"Boot": {"BootSourceOverrideTarget": "Pxe",
                                        "BootSourceOverrideEnabled": "Once"}}),
                ("POST", "/Actions/ComputerSystem.Reset", {"ResetType": "On"})):
            rsp = http.request(method, base + path, json=body, verify=ca, timeout=30)
            if rsp.status_code >= 400:
                raise RuntimeError("%s %s: HTTP %d" % (method, path, rsp.status_code))

    with ThreadPoolExecutor(max_workers=workers) as pool:
        list(pool.map(one, nodes))
