"""Capacity planning as pure functions: (demand, supply, policy, now, history) -> actions.

The controller (gpufleet.controller) and the simulator (gpufleet.simulate) call the same
planner; nothing here reads the world or the clock.
"""
