# -*- coding: utf-8 -*-
# Private to the gpufleet.baremetal collection; not a public API.
"""The one base error of the collection.

Every package (redfish, gate, image, lifecycle) derives its own errors from
GpufleetError; a module's ``main()`` catches it once and calls ``fail_json``.
Message shape: what failed, for which object, where, why, and the fix. ``details``
carry structured fields (HTTP status, Redfish message id, node) and never secrets.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

__all__ = ["GpufleetError"]


class GpufleetError(Exception):
    """Base of every error the collection raises on purpose."""

    def __init__(self, msg, **details):
        super(GpufleetError, self).__init__(msg)
        self.msg = msg
        self.details = details

    def to_fail_kwargs(self):
        """Keyword arguments for ``AnsibleModule.fail_json``."""
        kwargs = dict(self.details)
        kwargs["msg"] = self.msg
        return kwargs

    def __str__(self):
        return self.msg
