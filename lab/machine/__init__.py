"""The lab's machine node: a QEMU virtual machine with UEFI firmware and an NVMe disk."""
