# -*- coding: utf-8 -*-
# Part of the gpufleet controller package (controller/gpufleet); never shipped in the collection.
"""Run Packer: version check, plugin install (>= 1.8 only), validate, fmt, build.

The process runner is injected so unit tests never start Packer. A runner is a
callable ``runner(argv, cwd, on_line) -> (returncode, lines)`` that calls ``on_line``
for every output line as it arrives.
"""
from __future__ import absolute_import, division, print_function

__metaclass__ = type

import os
import shutil
import subprocess

from gpufleet.image import packer_output
from ansible_collections.gpufleet.baremetal.plugins.module_utils.image.errors import PackerError

__all__ = ["BUILDERS", "Packer", "subprocess_runner"]

BUILDERS = ("docker", "qemu")
PLUGINS = {"docker": "github.com/hashicorp/docker", "qemu": "github.com/hashicorp/qemu"}
TAIL = 25


def subprocess_runner(argv, cwd, on_line):
    """Default runner: stream stdout+stderr line by line."""
    proc = subprocess.Popen(argv, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                            universal_newlines=True, bufsize=1)
    lines = []
    for line in proc.stdout:
        lines.append(line.rstrip("\n"))
        on_line(line.rstrip("\n"))
    return proc.wait(), lines


def _ignore(line):
    return None


class Packer(object):
    """One Packer executable and the template directory it builds."""

    def __init__(self, template_dir, executable="packer", runner=None, which=shutil.which):
        self.template_dir = template_dir
        self.runner = runner or subprocess_runner
        self.path = which(executable)
        if self.path is None:
            raise PackerError("Packer executable %r was not found on PATH. Install Packer (Debian: "
                              "apt-get install packer; or from releases.hashicorp.com) and retry." % executable)

    def _run(self, args, on_line=_ignore):
        return self.runner([self.path] + list(args), self.template_dir, on_line)

    def version(self):
        rc, lines = self._run(["version"])
        parsed = packer_output.parse_version("\n".join(lines))
        if rc != 0 or parsed is None:
            raise PackerError("`packer version` failed or printed no version (rc=%s): %s. Reinstall Packer."
                              % (rc, " | ".join(lines[-3:])))
        return parsed

    def ensure_plugin(self, builder):
        """Packer < 1.8 bundles the docker and qemu builders; newer releases install plugins."""
        if self.version() < (1, 8, 0):
            return False
        rc, lines = self._run(["plugins", "install", PLUGINS[builder]])
        if rc != 0:
            raise PackerError("Installing the Packer %s plugin failed: %s. Check network access to "
                              "github.com or pre-install the plugin into PACKER_PLUGIN_PATH."
                              % (builder, " | ".join(lines[-5:])))
        return True

    def _var_args(self, var_file, variables):
        args = ["-var-file=%s" % var_file]
        for key in sorted(variables or {}):
            args.append("-var=%s=%s" % (key, variables[key]))
        return args

    def validate(self, builder, var_file, variables=None):
        _check_builder(builder)
        rc, lines = self._run(["validate", "-only=%s.node" % builder] + self._var_args(var_file, variables) + ["."])
        if rc != 0:
            raise PackerError("Template %s is invalid for builder %s with %s: %s. Fix the template or the pin file."
                              % (self.template_dir, builder, os.path.basename(var_file), " | ".join(lines[-TAIL:])),
                              builder=builder)
        return lines

    def fmt_check(self):
        rc, lines = self._run(["fmt", "-check", "."])
        if rc != 0:
            raise PackerError("Templates in %s are not `packer fmt` formatted: %s. Run `packer fmt %s`."
                              % (self.template_dir, ", ".join(lines), self.template_dir))
        return lines

    def build(self, builder, var_file, variables=None, on_line=_ignore):
        """Run ``packer build -machine-readable``; return the parsed lines."""
        _check_builder(builder)
        args = ["build", "-machine-readable", "-color=false", "-on-error=cleanup", "-only=%s.node" % builder]
        rc, lines = self._run(args + self._var_args(var_file, variables) + ["."], on_line)
        parsed = [packer_output.parse_line(line) for line in lines]
        if rc != 0:
            tail = [p.text() if p else raw for p, raw in zip(parsed, lines)][-TAIL:]
            errors = packer_output.error_lines(parsed)
            gone = packer_output.missing_pins(parsed)
            hint = (" The archive no longer has these pinned versions: %s; fix: pin versions it has "
                    "(`apt-cache madison PACKAGE` lists them) in the version's pin file."
                    % ", ".join("%s=%s" % pin for pin in gone)) if gone else ""
            raise PackerError("packer build of %s (builder %s) failed with exit code %d: %s.%s Last output:\n%s"
                              % (os.path.basename(var_file), builder, rc, " ".join(errors)[-800:] or "no error line",
                                 hint, "\n".join(tail)), builder=builder, returncode=rc)
        return parsed


def _check_builder(builder):
    if builder not in BUILDERS:
        raise PackerError('Builder "%s" is unknown. Use one of: %s.' % (builder, ", ".join(BUILDERS)))
