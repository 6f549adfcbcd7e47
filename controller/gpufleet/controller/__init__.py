"""The capacity controller's runtime: read demand and supply, run the planner, act, record.

The planning itself is gpufleet.capacity (pure); this package only reads the world into the
planner's types (demand.py, supply.py), runs its actions through the collection's playbooks
(actuator.py), records every decision in the ledger (journal.py) and loops (loop.py) while it
holds the ledger lease (records.py). docs/controller.md describes the commands.
"""
