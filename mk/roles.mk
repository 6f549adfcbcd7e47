# Per-node roles, rack inventory and the lab's Slurm controller (docs/roles.md, docs/inventory.md).
# node_labels' default scenario is cluster_join's (one converge of both, both roles' verify).
ROLES_MOLECULE := node_identity rdma_fabric cluster_join node_drain
ROLES_MUNGE_KEY ?= $(ROOT)/build/molecule/munge.key

.PHONY: slurm-images molecule molecule-key test-roles inventory-graph $(addprefix molecule-,$(ROLES_MOLECULE))

slurm-images: base-image ## build gpufleet/slurmctld:bookworm and the Molecule node image
	$(PY) lab/slurm/slurmctld.py build --node

molecule-key:
	@mkdir -p $(dir $(ROLES_MUNGE_KEY))
	@test -s $(ROLES_MUNGE_KEY) || head -c 48 /dev/urandom | base64 -w0 > $(ROLES_MUNGE_KEY)

$(addprefix molecule-,$(ROLES_MOLECULE)): molecule-%: slurm-images molecule-key collection
	cd roles/$* && GPUFLEET_MOL_MUNGE_KEY_FILE=$(ROLES_MUNGE_KEY) ANSIBLE_PIPELINING=True molecule test

molecule: slurm-images collection ## molecule test for every role (node_labels in cluster_join's scenario)
	$(PY) -m pytest tests/integration/roles/test_molecule.py $(PYTEST_ARGS)

test-roles: venv collection ## unit + integration tests of the roles area
	$(PY) -m pytest tests/unit/plugins/inventory tests/unit/plugins/module_utils/inventory tests/integration/roles $(PYTEST_ARGS)

inventory-graph: collection ## show the lab rack inventory
	ansible-inventory -i inventories/lab.rack.yml --graph
