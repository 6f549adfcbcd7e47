"""The lab (digital twin): emulated BMCs, node containers and a Slurm controller on one machine.

LAB ONLY. Nothing here ships in the collection (galaxy.yml ignores lab/). The
collection's playbooks drive the lab exactly as they drive real racks: through Redfish
(the BMC emulators of lab/bmc), virtual media carrying signed image artifacts, and the
scheduler (lab/slurm). Entry point: ``gpufleet lab up|down|status|fault``.
"""
