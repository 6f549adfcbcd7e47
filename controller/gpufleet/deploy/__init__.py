"""The deploy agent: what the installer medium runs to write a node's disk.

It runs inside the installer's ramdisk on a real machine, and its fetch, verify and write steps
run inside the lab's simulated installer too, so there is one installer, not two. It needs only
the standard library, ``cryptography`` (signature checks, through the collection's
``module_utils.image``) and a few disk tools (``lsblk``, ``sgdisk``, ``growpart``, ``resize2fs``,
``efibootmgr``).
"""
