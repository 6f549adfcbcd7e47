# The lab (digital twin) and the lifecycle. Included by the Makefile.
# `make demo` runs demo-controller: the capacity controller's loop on an all-cold lab
# (lab/controller_demo.py; each step is also a test in tests/integration/controller).
# demo-lab is the playbook-driven gang of 8 without a controller (tests/integration/lab).
DEMO_TARGET := demo-controller
.PHONY: lab-up lab-down lab-purge lab-status lab-image demo-lab demo-machine demo-controller test-controller-lab test-controller-lab-all

GPUFLEET := $(VENV)/bin/gpufleet
ifndef LAB_GANG_ID
LAB_GANG_ID := demo-$(shell date -u +%Y%m%dT%H%M%SZ)
endif
LAB_GANG_SIZE ?= 8

lab-image: venv collection base-image ## build and sign the lab golden image (reuses a verified identical build)
	$(GPUFLEET) image build lab --generate-key

lab-up: venv collection base-image ## start the lab: BMC emulators, node manager, Slurm controller
	$(GPUFLEET) lab up

lab-status: ## show the lab: racks, manager, node containers, Slurm states
	$(GPUFLEET) lab status

lab-down: ## stop the lab (keeps node disks, ledger and reports)
	$(GPUFLEET) lab down

lab-purge: ## stop the lab and delete node disks, ledger and reports
	$(GPUFLEET) lab down --purge

demo-controller: lab-image ## on a fresh, all-cold lab: the capacity controller fills the hot floor, serves -N2 from hot, a -N4 gang with a faulty member gets a spare, idle nodes are parked
	$(GPUFLEET) lab down --purge
	$(GPUFLEET) lab up
	$(GPUFLEET) lab publish --version lab
	$(VENV)/bin/python -m lab.controller_demo | tee build/lab/controller-demo.json
	$(GPUFLEET) controller status --lab --policy lab/config/capacity.yml

demo-machine: venv collection ## image the lab's UEFI virtual machine through its Redfish BMC with bring-up's imaging step: installer ISO as virtual media, deploy service, NVMe written, disk boots (needs scripts/bootstrap-host.sh's packages and libvirtd; a few minutes on a software CPU)
	$(PY) -m lab.machine.demo

demo-lab: lab-image ## on a fresh lab: gang-provision all 8 nodes (playbooks, no controller), run srun -N8 hostname, print the report
	$(GPUFLEET) lab down --purge
	$(GPUFLEET) lab up
	$(GPUFLEET) lab publish --version lab
	$(GPUFLEET) run gang --lab -e gpufleet_gang_id=$(LAB_GANG_ID) -e gpufleet_gang_size=$(LAB_GANG_SIZE) -e gpufleet_gang_sku=lab
	docker exec gpufleet-lab-slurmctld srun --reservation=$(LAB_GANG_ID) -N$(LAB_GANG_SIZE) hostname

test-controller-lab: venv collection base-image ## the controller's lab integration tests (one shared lab; takes the lab lock)
	flock /tmp/gpufleet-lab.lock $(VENV)/bin/python -m pytest tests/integration/controller -q

# The scenarios kept out of `make test` for CI's wall time (each passed in a lab run named in
# docs/benchmarks.md / docs/controller.md).
test-controller-lab-all: venv collection base-image ## the controller lab scenarios including the opt-in ones (power saving, replace, full refresh)
	GPUFLEET_POWER_SAVING_LAB=1 GPUFLEET_DAY2_REPLACE=1 GPUFLEET_REFRESH_ALL=1 \
	flock /tmp/gpufleet-lab.lock $(VENV)/bin/python -m pytest tests/integration/controller -v
