# The roles' systemd paths (molecule/systemd scenarios) on a systemd-booted node container (docs/roles.md).
SYSD_NODE_IMAGE := gpufleet-sysd-node:bookworm

.PHONY: sysd-node-image molecule-systemd $(addprefix molecule-systemd-,rdma_fabric cluster_join)

sysd-node-image: base-image ## build the systemd node image for the molecule/systemd scenarios
	docker build -q -t $(SYSD_NODE_IMAGE) -f roles/cluster_join/molecule/systemd/node.Dockerfile roles/cluster_join/molecule/systemd

molecule-systemd-rdma_fabric molecule-systemd-cluster_join: molecule-systemd-%: slurm-images sysd-node-image molecule-key collection
	cd roles/$* && GPUFLEET_MOL_MUNGE_KEY_FILE=$(ROLES_MUNGE_KEY) ANSIBLE_PIPELINING=True molecule test -s systemd

molecule-systemd: slurm-images collection ## molecule test -s systemd for rdma_fabric and cluster_join (+ node_labels)
	$(PY) -m pytest tests/integration/roles/test_molecule_systemd.py $(PYTEST_ARGS)
