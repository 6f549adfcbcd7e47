# Kubernetes paths of node_labels, cluster_join, node_drain against the lab's Kubernetes API and
# kubeadm SIMULATIONS (lab/k8s/, docs/roles-kubernetes.md).
ROLES_K8S := cluster_join node_labels node_drain
ROLES_K8S_LAB ?= $(ROOT)/build/molecule/k8s

.PHONY: k8s-lab molecule-k8s test-roles-k8s $(addprefix molecule-k8s-,$(ROLES_K8S))

k8s-lab: base-image venv ## node image gpufleet-k8s-node:bookworm + lab credentials for the k8s scenarios
	$(PY) lab/k8s/molecule_env.py $(ROLES_K8S_LAB)

$(addprefix molecule-k8s-,$(ROLES_K8S)): molecule-k8s-%: k8s-lab collection
	cd roles/$* && GPUFLEET_K8S_LAB_DIR=$(ROLES_K8S_LAB) ANSIBLE_PIPELINING=True molecule test -s kubernetes

molecule-k8s: collection ## molecule test -s kubernetes for the three roles, concurrently (2.5 min idle, 12 min at load ~20)
	$(PY) -m pytest tests/integration/roles/test_molecule_kubernetes.py $(PYTEST_ARGS)

test-roles-k8s: venv collection ## unit tests of the simulations + the kubernetes Molecule scenarios
	$(PY) -m pytest tests/unit/lab/k8s tests/integration/roles/test_molecule_kubernetes.py $(PYTEST_ARGS)
