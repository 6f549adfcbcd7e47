"""The capacity simulator: real demand replayed through the controller's own planner.

``gpufleet.capacity.planner.plan`` decides; this package only supplies what the controller
would read (jobs from a demand trace, node views from a simulated fleet, a clock), applies
the returned actions with sampled latencies, and measures the outcome. No policy logic lives
here: docs/capacity.md ("Simulator").
"""
