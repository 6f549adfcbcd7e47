import pytest

from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.errors import (
    BmcResponseError, TaskFailedError, WaitTimeoutError,
)
from ansible_collections.gpufleet.baremetal.plugins.module_utils.redfish.tasks import wait_task

MONITOR = "/redfish/v1/TaskService/Tasks/7/Monitor"


def accepted(rf):
    return rf.ok({}, 202, {"Location": MONITOR})


def test_not_202_is_returned_as_is(rf, generic):
    rsp = rf.ok(None, 204)
    assert wait_task(rf.make_client(generic), rsp, "reset") is rsp


def test_follows_the_monitor_until_completed(rf, generic, clock):
    generic.on("GET", MONITOR, [rf.ok({}, 202, {"Retry-After": "3"}),
                                rf.ok({"TaskState": "Completed"})])
    client = rf.make_client(generic, clock)
    assert wait_task(client, accepted(rf), "InsertMedia").status == 200
    assert clock.sleeps == [3.0]


@pytest.mark.parametrize("state", ["Exception", "Killed", "Cancelled"])
def test_failed_task_raises_with_messages(rf, generic, state):
    generic.on("GET", MONITOR, rf.ok({"TaskState": state, "Messages": [{"Message": "disk full"}]}))
    with pytest.raises(TaskFailedError) as err:
        wait_task(rf.make_client(generic), accepted(rf), "InsertMedia")
    assert "disk full" in err.value.msg and "node-1" in err.value.msg


def test_task_that_never_ends_times_out(rf, generic, clock):
    generic.on("GET", MONITOR, rf.ok({"TaskState": "Running"}, 202))
    with pytest.raises(WaitTimeoutError):
        wait_task(rf.make_client(generic, clock), accepted(rf), "InsertMedia", timeout=10, poll=2)


def test_202_without_monitor_is_an_unknown_outcome(rf, generic):
    with pytest.raises(BmcResponseError, match="no task monitor"):
        wait_task(rf.make_client(generic), rf.ok({}, 202), "reset")


@pytest.mark.parametrize("messages, shown", [
    ("disk full", "disk full"), ({"Message": "disk full"}, "disk full"),
    (["disk full", 7, None, {"Message": ["x"]}], "disk full"), (None, "ended Exception: Exception"),
    ([{"Message": "line one\nline two"}], "line one line two"),
])
def test_failed_task_with_odd_messages_still_fails_with_its_state(rf, generic, messages, shown):
    generic.on("GET", MONITOR, rf.ok({"TaskState": "Exception", "Messages": messages}))
    with pytest.raises(TaskFailedError) as err:
        wait_task(rf.make_client(generic), accepted(rf), "InsertMedia")
    assert shown in err.value.msg and "\n" not in err.value.msg


@pytest.mark.parametrize("task", [{"TaskState": ["Exception"]}, {"TaskState": {"x": 1}}])
def test_task_state_of_the_wrong_type_is_a_named_error(rf, generic, task):
    generic.on("GET", MONITOR, rf.ok(task))
    with pytest.raises(BmcResponseError) as err:
        wait_task(rf.make_client(generic), accepted(rf), "InsertMedia")
    assert "TaskState" in err.value.msg and MONITOR in err.value.msg


def test_task_monitor_of_the_wrong_type_is_a_named_error(rf, generic):
    with pytest.raises(BmcResponseError) as err:
        wait_task(rf.make_client(generic), rf.ok({"@odata.id": {"x": 1}}, 202), "reset")
    assert "@odata.id" in err.value.msg
