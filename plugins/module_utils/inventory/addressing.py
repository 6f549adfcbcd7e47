# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""Deterministic addressing: one address per rail from (rack index, slot).

On every rail, rack ``i`` owns the block of ``rack_stride`` addresses starting at
``network + i * rack_stride`` and slot ``s`` takes offset ``s`` in that block, so a node's
address never depends on which other nodes are present, and re-racking a node changes
its addresses only when its rack or slot changes.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import ipaddress
import re

try:
    from urllib.parse import urlsplit
except ImportError:  # Python 2
    from urlparse import urlsplit

from ansible_collections.gpufleet.baremetal.plugins.module_utils.inventory.errors import RackDescriptionError

__all__ = ["parse_network", "offset_address", "rail_offset", "check_overlaps", "endpoint", "url_host", "SCHEMES",
           "is_dns_name"]

# The schemes a Redfish BMC answers on, with their default ports.
SCHEMES = {"https": 443, "http": 80}
# A DNS label; underscores are tolerated (they occur in lab host names), dots separate labels.
_LABEL = re.compile(r"^(?!-)[A-Za-z0-9_-]{1,63}(?<!-)$")


def parse_network(text, entry):
    """Parse ``10.200.0.0/16`` (strict: host bits must be zero)."""
    try:
        return ipaddress.ip_network(u"%s" % text, strict=True)
    except (ValueError, TypeError) as exc:
        raise RackDescriptionError(
            entry, "%r is not a network in CIDR form (%s)" % (text, exc),
            "Write it as network/prefix with host bits zero, e.g. 10.200.0.0/16.")


def rail_offset(rack_index, slot, rack_stride):
    """Offset of a node inside every rail network."""
    return rack_index * rack_stride + slot


def offset_address(network, offset, entry):
    """The ``offset``-th address of ``network``; it must be a usable host address."""
    last_usable = network.num_addresses - 2 if network.prefixlen < network.max_prefixlen - 1 else network.num_addresses - 1
    if offset < 1 or offset > last_usable:
        raise RackDescriptionError(
            entry, "offset %d falls outside the usable hosts of %s (1..%d)" % (offset, network, last_usable),
            "Use a larger network, a smaller fabric.rack_stride or a lower rack index.")
    return network.network_address + offset


def check_overlaps(named_networks):
    """Fail on the first pair of overlapping networks; ``named_networks`` is [(name, net)]."""
    for pos, (name, net) in enumerate(named_networks):
        for other_name, other in named_networks[pos + 1:]:
            if net.version == other.version and net.overlaps(other):
                raise RackDescriptionError(
                    name, "network %s overlaps %s of %s" % (net, other, other_name),
                    "Give every rail and the BMC network its own non-overlapping subnet.")


def is_dns_name(name):
    """True for a DNS name (labels of letters, digits, - and _), at most 253 characters."""
    labels = name.rstrip(".").split(".")
    return 0 < len(name) <= 253 and all(_LABEL.match(label) for label in labels)


def _address_error(url, entry, problem):
    shown = re.sub(r"//[^/]*@", "//***@", url)  # never echo a password written into the URL
    return RackDescriptionError(
        entry, "BMC address %r %s" % (shown, problem),
        "Write it as https://HOST[:PORT] with HOST a valid IPv4 address, [IPv6] address or DNS name.")


def _check_host(host, url, entry):
    """An IP address (validated by ``ipaddress``) or a DNS name; ``999.1.1.1`` is neither."""
    if ":" in host:
        try:
            return ipaddress.IPv6Address(u"%s" % host).compressed
        except ValueError as exc:
            raise _address_error(url, entry, "has an invalid IPv6 address (%s)" % exc)
    labels = host.rstrip(".").split(".")
    if labels[-1].isdigit():  # a name never ends in a number label: it is meant as an IPv4 address
        try:
            return str(ipaddress.IPv4Address(u"%s" % host))
        except ValueError as exc:
            raise _address_error(url, entry, "has an invalid IPv4 address (%s)" % exc)
    if not is_dns_name(host):
        raise _address_error(url, entry, "has an invalid host name %r" % host)
    return host.rstrip(".").lower()


def endpoint(url, entry):
    """(host, port, path) that identify the BMC at ``url``; a bad address names ``entry``.

    A bare host means https, as the Redfish client reads it; the port defaults by scheme so
    https://10.0.0.5 and https://10.0.0.5:443 are the same BMC.
    """
    text = url if "://" in url else "https://" + url
    try:
        parts = urlsplit(text)
        if "@" in parts.netloc:
            raise RackDescriptionError(entry, "the BMC address carries credentials",
                                       "Remove user:password@ from it; set bmc.credentials instead.")
        port = parts.port
    except ValueError as exc:
        raise _address_error(url, entry, "cannot be read (%s)" % exc)
    scheme = parts.scheme.lower()
    if scheme not in SCHEMES:
        raise _address_error(url, entry, "has scheme %r, not one of %s" % (scheme, ", ".join(sorted(SCHEMES))))
    if parts.query or parts.fragment or not parts.hostname:
        raise _address_error(url, entry, "has no host" if not parts.hostname else "has a query or fragment")
    host = _check_host(parts.hostname, url, entry)
    return host, port or SCHEMES[scheme], parts.path.rstrip("/")


def url_host(address):
    """``address`` as it goes into a URL: an IPv6 address in brackets."""
    return "[%s]" % address if getattr(address, "version", 4) == 6 else str(address)
