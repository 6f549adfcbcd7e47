"""Day-2 decision core: detect, persist, budget, repair, renew, refresh (docs/day2.md).

Pure functions over plain data (inputs as arguments, the clock passed in, no I/O); the
controller loop that feeds and applies them is not wired yet (docs/day2.md, Not wired).
"""
