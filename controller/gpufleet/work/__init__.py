"""The controller's doing side as one model: what to do, how each kind is done, how it is written down.

- ``action``: the one frozen ``Action`` every stage (capacity, repair, rollout) hands the loop;
- ``kinds``: one table of action kinds (playbook, extra variables, expected state, ledger-only,
  disturbs fabric peers, bounded);
- ``codec``: an action to its journal line and back (a restarted controller resumes from it);
- ``folds``: the decision log's look-backs (one read per pass serves every book folded from it)
  and the per-node walk the repair case book and the rollout book share.

Nothing here imports the rest of the controller package: the planner, the day-2 stages, the
loop and the view all build on it.
"""
