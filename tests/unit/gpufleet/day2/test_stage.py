"""The day-2 stage of a pass: detection -> persistence -> budget -> repair steps."""
from gpufleet.capacity.model import Job, NodeView
from gpufleet.capacity.policy import Members, Pool
from gpufleet.day2.cases import OpenCase
from gpufleet.day2.model import Signal
from gpufleet.day2.repair import Case
from gpufleet.day2.stage import decide

NOW = 10_000.0


def pool(**day2):
    return {"lab": Pool(sku="lab", members=Members(groups=("sku_lab",)), floors={"hot": 1},
                        day2=dict({"persistence": {"count": 2, "window": "10m"}, "budget": 1}, **day2))}


def view(node, state="joined", tier="idle", jobs=()):
    return NodeView(node=node, pool="lab", tier=tier, state=state, gate_passed_at=NOW - 60, jobs=jobs)


VIEWS = (view("n1"), view("n2", "hot", "hot"), view("n3", "hot", "hot"), view("n4", "parked", "warm"))
NHC = ("n1", "IDLE+DRAIN", "NHC: check_gpu failed", None)


def run(rows, tracks=None, cases=None, busy=(), views=VIEWS, jobs=(), signals=(), pools=None, now=NOW,
        replacements=None):
    return decide(rows, views, jobs, pools or pool(), tracks or {}, cases or {}, set(busy), now,
                  extra_signals=signals, replacements=replacements)


def test_a_health_checker_drain_acts_only_after_it_persisted():
    first = run([NHC])
    assert first.actions == () and first.tracks
    second = run([NHC], tracks=first.tracks, now=NOW + 10)
    drain, = second.actions
    assert (drain.kind, drain.nodes) == ("drain", ("n1",)) and "NHC: check_gpu failed" in drain.reason
    assert "n1" in second.claimed


def test_a_node_with_a_signal_not_yet_persisted_is_no_supply_spare_or_peer():
    """Lab: a hot node a health checker drained for a slow HCA was offered as the fabric peer
    of a healthy node's bring-up before its signal persisted; both failed the fabric phase."""
    hot_nhc = ("n2", "IDLE+DRAIN", "NHC: check_hca failed", None)
    first = run([hot_nhc])
    assert first.actions == () and "n2" in first.claimed
    # and the case's recycle takes the other hot node as its peer, never the suspect
    redfish = Signal("n2", "redfish", "bmc_health", "system health Warning", NOW)
    case = OpenCase(Case("n1", "lab", "draining", NOW - 300))
    recycle, = run([], cases={"n1": case}, signals=[redfish]).actions
    assert recycle.kind == "recycle" and recycle.peers == ("n3",), recycle


def test_a_suspect_node_stays_no_supply_between_readings_until_its_track_ends():
    """A Redfish reading is handed to the stage once (every bmc_interval): the passes between
    two readings show no signal. Lab: a hot node powered off behind the controller's back
    counted as hot again in those passes, and the planner parked it before day-2 acted."""
    off = Signal("n2", "redfish", "power_off", "power Off while the ledger says hot", NOW)
    first = run([], signals=[off])
    assert first.actions == () and "n2" in first.claimed
    between = run([], tracks=first.tracks, now=NOW + 3)
    assert between.actions == () and "n2" in between.claimed          # still suspect
    # never seen again within the window (lab pool: 10 min): the track ends, the node is supply
    later = run([], tracks=between.tracks, now=NOW + 601)
    assert later.tracks == {} and "n2" not in later.claimed
    # seen at the next reading: persisted (2 sightings), drained
    drain, = run([], tracks=between.tracks, signals=[off], now=NOW + 15).actions
    assert (drain.kind, drain.nodes) == ("drain", ("n2",))


def test_a_track_ends_when_its_node_is_drained_so_the_repaired_node_is_not_suspect_after():
    first = run([NHC])
    assert any(key[0] == "n1" for key in first.tracks)
    drained = run([NHC], tracks=first.tracks, now=NOW + 10)
    assert [a.kind for a in drained.actions] == ["drain"]
    assert not any(key[0] == "n1" for key in drained.tracks)     # acted on: its work is done
    # the case closed (readmitted), no signal since: supply again at once, not after the window
    assert "n1" not in run([], tracks=drained.tracks, now=NOW + 200).claimed


def test_operator_drains_and_our_own_holds_are_left_alone():
    rows = [("n1", "IDLE+DRAIN", "rack move, ticket 42", None), ("n2", "IDLE+DRAIN", "", None),
            ("n3", "IDLE+DRAIN", "gpufleet:hold: idle", None)]
    result = run(rows, tracks=run(rows).tracks, now=NOW + 10)
    assert result.actions == () and [o.node for o in result.operator] == ["n1"]
    assert result.claimed == {"n1"}          # no supply for the planner: a resume would undo it


def test_nodes_not_in_service_are_not_watched():
    rows = [("n4", "DOWN+POWERED_DOWN", "", None)]
    assert run(rows, tracks=run(rows).tracks, now=NOW + 10).actions == ()


def test_the_budget_holds_the_second_node_back():
    rows = [NHC, ("n2", "DOWN", "Not responding", None)]
    result = run(rows, tracks=run(rows).tracks, now=NOW + 10)
    assert [a.nodes for a in result.actions] == [("n2",)]     # down before drain: more severe
    assert any("budget" in note for note in result.notes)


def test_an_open_case_spends_the_budget_and_a_busy_node_is_never_started_again():
    rows = [NHC]
    draining = {"n2": OpenCase(Case("n2", "lab", "recycling", NOW - 5), in_flight=True)}
    result = run(rows, tracks=run(rows).tracks, cases=draining, now=NOW + 10)
    assert result.actions == ()
    result = run(rows, tracks=run(rows).tracks, busy={"n1"}, now=NOW + 10)
    assert result.actions == ()


def test_a_drained_case_recycles_with_a_known_good_peer():
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
    recycle, = run([], cases=cases).actions
    assert recycle.kind == "recycle" and recycle.peers == ("n2",) and not recycle.blocked


def test_a_case_whose_drain_failed_is_drained_again_with_the_same_action():
    """A failed drain leaves its case detected: the next pass drains again, with no jobs and no
    target tier on the action (the running jobs are the case's, a drain waits for them)."""
    jobs = (Job("7", 1, state="RUNNING", nodes_assigned=("n1",)),)
    cases = {"n1": OpenCase(Case("n1", "lab", "detected", NOW - 5))}
    drain, = run([], cases=cases, jobs=jobs).actions
    assert (drain.kind, drain.nodes, drain.jobs, drain.target_tier) == ("drain", ("n1",), (), None)
    assert drain.reason == "drain so nothing new starts on it" and drain.stage == "repair"


def test_a_recycle_without_a_peer_is_blocked_once_and_says_why():
    lone = (view("n1", "draining", "unavailable"), view("n4", "parked", "warm"))
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
    blocked, = run([], cases=cases, views=lone).actions
    assert blocked.blocked.startswith("too few fabric peers") and blocked.peers == ()
    again = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5), not_started="not started: " + blocked.blocked)}
    result = run([], cases=again, views=lone)
    assert result.actions == () and "too few fabric peers" in result.notes[0]


def test_running_jobs_are_waited_for_then_requeued():
    jobs = (Job("7", 1, state="RUNNING", nodes_assigned=("n1",)),)
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
    assert run([], cases=cases, jobs=jobs).actions == ()
    requeue, = run([], cases=cases, jobs=jobs, now=NOW + 7200).actions
    assert requeue.kind == "requeue" and requeue.jobs == ("7",)


def test_a_recycled_node_goes_back_to_the_tier_the_floors_need():
    cases = {"n2": OpenCase(Case("n2", "lab", "recycled", NOW - 5))}
    readmit, = run([], cases=cases).actions          # n3 is hot: the floor of 1 is met
    assert (readmit.kind, readmit.target_tier) == ("readmit", "joined")
    short = (view("n1"), view("n2", "hot", "hot"), view("n4", "parked", "warm"))
    readmit, = run([], cases=cases, views=short).actions
    assert readmit.target_tier == "hot"


def test_repeated_failed_recycles_end_in_break_fix_with_a_record():
    case = Case("n1", "lab", "recycle_failed", NOW - 5, failed_recycles=(NOW - 100, NOW - 10))
    cases = {"n1": OpenCase(case, reasons=((NOW - 500, "drain: NHC: check_gpu failed"),))}
    action, = run([], cases=cases).actions
    assert action.kind == "break_fix" and action.record["reasons"] == ((NOW - 500, "drain: NHC: check_gpu failed"),)
    assert "2 failed recycle" in action.reason


def test_redfish_signals_count_for_nodes_in_service_only():
    off = [Signal("n2", "redfish", "power_off", "powered Off while the ledger says on", NOW),
           Signal("n4", "redfish", "power_off", "powered Off while the ledger says on", NOW)]
    first = run([], signals=off)
    drain, = run([], tracks=first.tracks, signals=off, now=NOW + 10).actions
    assert drain.nodes == ("n2",) and "power_off" in drain.reason


def test_signals_of_a_node_under_our_own_action_are_not_counted():
    off = [Signal("n2", "redfish", "power_off", "powered Off while the ledger says on", NOW)]
    first = run([NHC], signals=off, busy={"n1", "n2"})
    assert first.tracks == {}


# "Replace, then repair": n1 runs multi-node job 7 with n5 when NHC drains it.
JOB7 = (Job("7", 2, state="RUNNING", nodes_assigned=("n1", "n5")),)
BUSY_VIEWS = (view("n1", tier="busy", jobs=("7",)), view("n5", tier="busy", jobs=("7",)),
              view("n2", "hot", "hot"), view("n3", "hot", "hot"), view("n4", "parked", "warm"))


def detected(views=BUSY_VIEWS, jobs=JOB7, pools=None, busy=(), rows=(NHC,)):
    first = run(list(rows), views=views, jobs=jobs, pools=pools, busy=busy)
    return run(list(rows), tracks=first.tracks, views=views, jobs=jobs, pools=pools, busy=busy, now=NOW + 10)


def test_a_failed_member_of_a_running_multi_node_job_is_replaced_from_the_hot_tier_in_the_same_pass():
    result = detected()
    resume, drain = result.actions
    assert (resume.kind, resume.nodes, resume.job_id, resume.replaces) == ("resume", ("n2",), "7", "n1")
    assert "job 7" in resume.reason and "n1" in resume.reason and not resume.blocked
    assert (drain.kind, drain.nodes, drain.jobs) == ("drain", ("n1",), ("7",))   # repair goes on behind it
    assert {"n1", "n2"} <= result.claimed          # the planner must not resume or park n2 as well


def test_the_replacement_is_resumed_inside_a_reservation_for_its_job_then_the_job_is_bound():
    """The resumed spare was schedulable for any job: a higher-priority pending job could take
    it first. It is resumed inside JOB@EPOCH on the job's survivors and the spare; the pass that
    sees the job pending again outside it binds it (docs/day2.md)."""
    from gpufleet.day2 import bindings
    resume = detected().actions[0]
    assert resume.reservation == "7@%d" % int(NOW + 10) and resume.reserve_nodes == ("n2", "n5")
    recorded = [{"action": "resume", "pool": "lab", "nodes": ["n2"], "job": "7", "outcome": "ok", "at": NOW + 10,
                 "demand": {"action": {"day2": True, "reservation": resume.reservation, "reserve_nodes": ["n2", "n5"]}}}]
    open_ = bindings.fold(recorded)
    # still running (the drain lets it run): nothing to bind yet
    assert run([], views=BUSY_VIEWS, jobs=JOB7, replacements=open_).actions == ()
    pending = (Job("7", 2, state="PENDING"),)
    bind, = run([], views=BUSY_VIEWS, jobs=pending, replacements=open_).actions
    assert (bind.kind, bind.nodes, bind.job_id, bind.reservation, bind.reserve_nodes) == (
        "bind", ("n2",), "7", resume.reservation, ("n2", "n5"))
    assert "pending again" in bind.reason and resume.reservation in bind.reason
    # bound already (Slurm reports the reservation), or a bind recorded: never again
    bound = (Job("7", 2, state="PENDING", reservation=resume.reservation),)
    assert run([], views=BUSY_VIEWS, jobs=bound, replacements=open_).actions == ()
    done = recorded + [dict(recorded[0], action="bind", outcome="failed: rc 1", at=NOW + 20)]
    assert run([], views=BUSY_VIEWS, jobs=pending, replacements=bindings.fold(done)).actions == ()
    # a resume that failed or was not started opens nothing
    assert bindings.fold([dict(recorded[0], outcome="failed: rc 2")]) == {}


def test_a_requeued_job_waiting_for_its_bind_is_no_demand_for_the_planner_until_the_bind_is_done():
    """Slurm's requeue delay (BeginTime) hides the requeued job for 120 s by default; with a low
    cred_expire the planner would see it pending and admit it as a new gang elsewhere, leaving
    the spare idle. Day-2 names it until its bind's outcome is in."""
    from gpufleet.day2 import bindings
    recorded = [{"action": "resume", "pool": "lab", "nodes": ["n2"], "job": "7", "outcome": "ok", "at": NOW,
                 "demand": {"action": {"day2": True, "reservation": "7@1", "reserve_nodes": ["n2", "n5"]}}}]
    pending = (Job("7", 2, state="PENDING"), Job("8", 1, state="PENDING"))

    def awaiting(decisions, jobs=pending, pools=None):
        return run([], views=BUSY_VIEWS, jobs=jobs, replacements=bindings.fold(decisions), pools=pools).awaiting_bind

    assert awaiting(recorded, jobs=JOB7) == frozenset()                     # still running: nothing yet
    assert awaiting(recorded) == {"7"}                                      # the bind is due
    bind = dict(recorded[0], action="bind", outcome=None, at=NOW + 20)
    assert awaiting(recorded + [bind]) == {"7"}                             # the bind in flight
    assert awaiting(recorded + [bind], jobs=(Job("7", 2, state="PENDING", reservation="7@1"),)) == frozenset()
    # the bind's outcome is in: a job still pending outside is the planner's again (one bind, ever)
    assert awaiting(recorded + [dict(bind, outcome="ok")]) == frozenset()
    assert awaiting(recorded + [dict(bind, outcome="failed: rc 1")]) == frozenset()
    # a replacement of a pool outside this controller's policy is not its to bind
    other = [dict(recorded[0], pool="other")]
    assert awaiting(other) == frozenset()


def test_a_replacement_spare_is_held_from_the_planner_until_its_job_runs_on_it():
    """An idle joined spare would be parked after the pool's idle time while its job still runs
    elsewhere or waits for the requeue; the reservation would then hold a powered-off node."""
    from gpufleet.day2 import bindings
    open_ = {"7@1": bindings.Replacement("7", "lab", "7@1", ("n2", "n5"), ("n2",))}
    assert "n2" in run([], views=BUSY_VIEWS, jobs=JOB7, replacements=open_).claimed           # runs on n1, n5
    requeued = run([], views=BUSY_VIEWS, jobs=(Job("7", 2, state="PENDING"),), replacements=open_).claimed
    assert {"n2", "n5"} <= requeued          # the survivor too: parked, the job waited for the repair (lab)
    on_it = (Job("7", 2, state="RUNNING", nodes_assigned=("n2", "n5")),)
    assert "n2" not in run([], views=BUSY_VIEWS, jobs=on_it, replacements=open_).claimed      # busy: its own
    assert "n2" not in run([], views=BUSY_VIEWS, jobs=(), replacements=open_).claimed         # job gone


def test_a_gang_the_controller_admitted_keeps_its_reservation_and_a_site_reservation_is_left_alone():
    """Lab: the -N2 job ran in its gang reservation 7@...; a second reservation on its nodes
    overlapped it and Slurm refused. The spare joins the gang's; a site's own is not touched."""
    gang = (Job("7", 2, state="RUNNING", nodes_assigned=("n1", "n5"), reservation="7@1795000000"),)
    resume = detected(jobs=gang).actions[0]
    assert resume.reservation == "7@1795000000" and resume.reserve_nodes == ("n2", "n5")
    # the failed member leaves the gang's reservation: once requeued (Slurm's delay, 120 s by
    # default) the job starts on its survivor and the spare, not on n1 repaired meanwhile (lab)
    assert resume.release_nodes == ("n1",)
    site = (Job("7", 2, state="RUNNING", nodes_assigned=("n1", "n5"), reservation="ml-team"),)
    resume = detected(jobs=site).actions[0]
    assert resume.nodes == ("n2",) and resume.reservation == "" and resume.reserve_nodes == ()
    assert "runs in reservation ml-team, not the controller's" in resume.reason
    other_job = (Job("7", 2, state="RUNNING", nodes_assigned=("n1", "n5"), reservation="17@1795000000"),)
    assert detected(jobs=other_job).actions[0].reservation == ""        # another job's gang: not ours


def test_a_job_losing_two_members_at_once_gets_one_reservation_with_both_spares():
    job = (Job("7", 3, state="RUNNING", nodes_assigned=("n1", "n5", "n6")),)
    views = BUSY_VIEWS + (view("n6", tier="busy", jobs=("7",)),)
    rows = (NHC, ("n6", "IDLE+DRAIN", "NHC: check_gpu failed", None))
    result = detected(views=views, jobs=job, rows=rows, pools=pool(budget=2))
    resumes = [a for a in result.actions if a.kind == "resume"]
    assert sorted(a.nodes for a in resumes) == [("n2",), ("n3",)]
    assert {a.reservation for a in resumes} == {"7@%d" % int(NOW + 10)}
    assert {a.reserve_nodes for a in resumes} == {("n2", "n3", "n5")}
    # both failed members in each resume: run at once, either may write the reservation last
    assert {a.release_nodes for a in resumes} == {("n1", "n6")}


def test_a_failed_member_left_without_a_spare_stays_in_the_reservation():
    """One spare for two failed members: the one not replaced stays reserved for the job, which
    waits for its repair; taking it out would leave the job fewer nodes than it needs."""
    job = (Job("7", 3, state="RUNNING", nodes_assigned=("n1", "n5", "n6")),)
    views = (view("n1", tier="busy", jobs=("7",)), view("n5", tier="busy", jobs=("7",)),
             view("n6", tier="busy", jobs=("7",)), view("n2", "hot", "hot"))
    rows = (NHC, ("n6", "IDLE+DRAIN", "NHC: check_gpu failed", None))
    result = detected(views=views, jobs=job, rows=rows, pools=pool(budget=2))
    replaced, = [a for a in result.actions if a.kind == "resume" and not a.blocked]
    waiting, = [a for a in result.actions if a.kind == "resume" and a.blocked]
    assert (replaced.nodes, replaced.replaces, replaced.release_nodes) == (("n2",), "n1", ("n1",))
    assert waiting.replaces == "n6" and "no hot node" in waiting.blocked


def test_no_replacement_for_a_single_node_job_or_a_node_running_nothing():
    single = (Job("8", 1, state="RUNNING", nodes_assigned=("n1",)),)
    assert [a.kind for a in detected(jobs=single).actions] == ["drain"]
    assert [a.kind for a in detected(jobs=()).actions] == ["drain"]


def test_a_replacement_never_comes_from_another_pool_a_gang_or_a_node_already_in_use():
    from gpufleet.capacity.model import NodeView
    other = NodeView(node="m1", pool="other", tier="hot", state="hot", gate_passed_at=NOW - 60)
    gang = NodeView(node="n2", pool="lab", tier="hot", state="hot", gate_passed_at=NOW - 60, gang_id="9@1")
    views = BUSY_VIEWS[:2] + (other, gang, view("n3", "hot", "hot"), view("n4", "parked", "warm"))
    pools = dict(pool(), other=pool()["lab"])
    resume = detected(views=views, pools=pools, busy={"n3"}).actions[0]
    assert resume.nodes == () and resume.blocked            # m1: other pool, n2: gang, n3: in flight


def test_no_hot_node_is_a_wait_recorded_once_with_the_reason_and_nothing_resumed():
    views = BUSY_VIEWS[:2] + (view("n4", "parked", "warm"),)
    result = detected(views=views)
    wait, drain = result.actions
    assert wait.kind == "resume" and wait.nodes == () and (wait.job_id, wait.replaces) == ("7", "n1")
    assert wait.blocked.startswith("job 7 lost n1; no hot node in pool 'lab'")
    assert drain.kind == "drain" and any("no hot node" in n for n in result.notes)
    # the next pass has the case open (drain recorded): no second replacement, no second wait
    cases = {"n1": OpenCase(Case("n1", "lab", "draining", NOW + 10))}
    later = run([NHC], views=views, jobs=JOB7, cases=cases, now=NOW + 20)
    assert [a.kind for a in later.actions] == []


def test_a_node_held_back_by_the_budget_gets_no_replacement_until_its_drain_starts():
    rows = (NHC, ("n5", "DOWN", "Not responding", None))     # n5 (down) is more severe: it goes first
    result = detected(rows=rows)
    assert [(a.kind, a.nodes) for a in result.actions] == [("resume", ("n2",)), ("drain", ("n5",))]
    assert result.actions[0].replaces == "n5"


# Fabric sets: the inventory's gpufleet_fabric_set / gpufleet_rack (stage's `fabric` input).
LONE = {"n1": OpenCase(Case("n1", "lab", "draining", NOW - 5))}
FABRIC_VIEWS = (view("n1", "draining", "unavailable"), view("n2", "hot", "hot"), view("n3", "hot", "hot"),
                view("n4", "joined", "idle"))


def recycle_peers(fabric):
    action, = decide([], FABRIC_VIEWS, (), pool(), {}, LONE, set(), NOW, fabric=fabric).actions
    return action


def test_a_lone_node_is_revalidated_with_a_peer_of_its_own_fabric_set_same_rack_first():
    fabric = {"n1": ("su1", "r2"), "n2": ("su2", "r2"), "n3": ("su1", "r1"), "n4": ("su1", "r2")}
    assert recycle_peers(fabric).peers == ("n3",)            # hot before idle, n2 is another fabric
    fabric["n3"] = ("su1", "r9")
    fabric["n4"] = ("su1", "r9")
    fabric["n2"] = ("su1", "r2")
    assert recycle_peers(fabric).peers == ("n2",)            # same rack first among the hot ones


def test_a_fabric_set_without_a_free_known_good_peer_blocks_the_recycle_and_names_the_set():
    fabric = {"n1": ("su1", "r1"), "n2": ("su2", "r1"), "n3": ("su2", "r1"), "n4": ("su2", "r1")}
    action = recycle_peers(fabric)
    assert action.peers == () and "fabric set 'su1'" in action.blocked


def test_without_fabric_sets_the_pool_is_the_fabric_set():
    action = recycle_peers(None)
    assert action.peers == ("n2",) and "fabric set 'pool:lab'" in action.reason


def test_a_recycle_picks_a_peer_lent_to_another_run_in_flight_last():
    def peers(lent):
        action, = decide([], FABRIC_VIEWS, (), pool(), {}, LONE, set(), NOW, lent=lent).actions
        return action.peers
    assert peers(set()) == ("n2",)
    assert peers({"n2"}) == ("n3",)
    assert peers({"n2", "n3"}) == ("n4",)        # an idle joined one not lent, before a lent hot one
    assert peers({"n2", "n3", "n4"}) == ("n2",)  # all lent: shared rather than blocked (hot first)
