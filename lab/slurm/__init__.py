"""SIMULATION ONLY: part of the gpufleet lab (digital twin); never shipped."""
