"""gpufleet: everything that runs on the controller (docs/architecture.md draws the layers).

The command line, the ansible-runner driver, reports, the image build tooling and the
capacity controller. Importing the package installs Ansible's collection loader, so the
collection's module_utils import the way Ansible finds them (gpufleet.collection says how).
"""
from gpufleet import collection

collection.install_loader()
