"""Day-2 decision core: detect, persist, budget, repair, renew, refresh (docs/day2.md).

Pure functions over plain data (inputs as arguments, the clock passed in, no I/O); the
controller's stages (gpufleet.controller.stages) feed them and apply what they decide.
"""
