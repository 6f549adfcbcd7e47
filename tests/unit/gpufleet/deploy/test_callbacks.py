"""gpufleet.deploy.callbacks: the install book in its state directory: each order served once,
callbacks only with the node's current token and none after the final one; several book
instances (processes) on one directory agree; nothing secret is kept beyond the order file."""
import json
import os
import stat
import threading

import pytest

from gpufleet.deploy.callbacks import InstallBook
from gpufleet.deploy.errors import DeployError
from gpufleet.deploy.orders import install_order, new_token

UUID = "4c4c4544-0042-3510-8048-b4c04f4a3332"
SEED = {"hostname": "n1", "ssh_key": "ssh-ed25519 AAAAC3NzaC1lZDI1NTE5AAAAIGsomekey ctl"}


def _order(token, node="n1", url="https://127.0.0.1:1/v1/nodes/n1/events"):
    return install_order(node, "https://img/v1.raw.gz", {"serial": "S1"}, SEED, url, token)


def _event(state="running", step="write", node="n1"):
    return json.dumps({"node": node, "state": state, "step": step}).encode()


def _files(root):
    return {os.path.relpath(os.path.join(d, f), root): open(os.path.join(d, f), "rb").read()
            for d, _, names in os.walk(root) for f in names}


def test_the_order_is_served_once_then_gone(tmp_path):
    book = InstallBook(str(tmp_path / "state"))
    book.expect("n1", UUID.upper(), _order(new_token()))
    assert not book.served("n1")
    status, body = book.order_for(UUID)
    assert status == 200 and json.loads(body)["node"] == "n1" and book.served("n1")
    assert book.order_for(UUID)[0] == 410
    assert book.order_for("4c4c4544-0000-0000-0000-000000000000")[0] == 404
    assert book.order_for("../../etc/passwd")[0] == 404


def test_another_book_on_the_same_directory_serves_the_order_and_then_refuses_it(tmp_path):
    writer = InstallBook(str(tmp_path / "state"))
    writer.expect("n1", UUID, _order(new_token()))
    assert InstallBook(str(tmp_path / "state")).order_for(UUID)[0] == 200
    assert InstallBook(str(tmp_path / "state")).order_for(UUID)[0] == 410      # a restart forgets nothing


def test_only_the_nodes_token_is_accepted_and_the_final_event_consumes_it(tmp_path):
    book, token = InstallBook(str(tmp_path / "state"), clock=lambda: 5.0), new_token()
    book.expect("n1", UUID, _order(token))
    assert book.receive("n1", None, _event())[0] == 401
    assert book.receive("n1", "Bearer " + new_token(), _event())[0] == 401
    assert book.receive("n1", "Basic " + token, _event())[0] == 401
    assert book.receive("n2", "Bearer " + token, _event(node="n2"))[0] == 403
    assert book.receive("../n1", "Bearer " + token, _event(node="../n1"))[0] == 403
    assert book.receive("n1", "Bearer " + token, b"not json")[0] == 400
    assert book.receive("n1", "Bearer " + token, _event(state="done"))[0] == 400
    assert book.receive("n1", "Bearer " + token, _event(node="n2"))[0] == 400
    assert book.events("n1") == []                       # nothing refused was recorded
    assert book.receive("n1", "Bearer " + token, _event())[0] == 200
    assert book.outcome("n1") is None
    assert book.receive("n1", "Bearer " + token, _event("imaged", "done"))[0] == 200
    assert book.outcome("n1") == "imaged"
    later = InstallBook(str(tmp_path / "state"))          # another process sees it consumed too
    assert later.receive("n1", "Bearer " + token, _event("failed", "write"))[0] == 403
    assert [(e["state"], e["step"], e["received_at"]) for e in later.events("n1")] == [
        ("running", "write", 5.0), ("imaged", "done", 5.0)]


def test_a_new_order_replaces_the_old_token_and_starts_a_new_event_stream(tmp_path):
    root = tmp_path / "state"
    book, old, new = InstallBook(str(root)), new_token(), new_token()
    book.expect("n1", UUID, _order(old))
    assert book.receive("n1", "Bearer " + old, _event(step="verify manifest"))[0] == 200
    first_run = book.record("n1")["run"]
    book.expect("n1", UUID, _order(new))
    assert book.record("n1")["run"] != first_run
    assert book.order_for(UUID)[0] == 200                # the new order is served, not a 410
    assert book.receive("n1", "Bearer " + old, _event())[0] == 401
    assert book.events("n1") == []
    assert book.receive("n1", "Bearer " + new, _event(step="seed"))[0] == 200
    assert [e["step"] for e in book.events("n1")] == ["seed"]
    history = [json.loads(line) for line in (root / "events" / ("n1.%s.jsonl" % first_run)).read_text().splitlines()]
    assert [e["step"] for e in history] == ["verify manifest"]


def test_an_event_of_a_replaced_install_never_counts_for_the_new_one(tmp_path):
    book, token = InstallBook(str(tmp_path / "state")), new_token()
    book.expect("n1", UUID, _order(token))
    current = tmp_path / "state" / "events" / "n1.jsonl"
    with open(current, "ab") as out:        # a late append from the old run, and a torn line
        out.write(json.dumps({"node": "n1", "state": "imaged", "step": "done", "run": "old"}).encode() + b"\n")
        out.write(b'{"node": "n1", "state": "imag')
    assert book.events("n1") == [] and book.outcome("n1") is None


def test_concurrent_fetches_get_the_order_once_and_concurrent_finals_count_once(tmp_path):
    token = new_token()
    InstallBook(str(tmp_path / "state")).expect("n1", UUID, _order(token))
    books = [InstallBook(str(tmp_path / "state")) for _ in range(8)]
    answers = []
    threads = [threading.Thread(target=lambda b=b: answers.append(b.order_for(UUID)[0])) for b in books]
    threads += [threading.Thread(target=lambda b=b: answers.append(
        b.receive("n1", "Bearer " + token, _event("imaged" if i % 2 else "failed", "done"))[0]))
        for i, b in enumerate(books)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert sorted(answers) == [200] * 2 + [403] * 7 + [410] * 7     # one order served, one final recorded
    assert len([e for e in books[0].events("n1") if e["state"] in ("imaged", "failed")]) == 1


def test_the_token_is_kept_only_in_the_order_file_and_leaves_with_it(tmp_path):
    root = tmp_path / "state"
    book, token = InstallBook(str(root)), new_token()
    book.expect("n1", UUID, _order(token))
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o700
    holding = [name for name, data in _files(str(root)).items() if token.encode() in data]
    assert holding == [os.path.join("orders", UUID + ".json")]
    assert stat.S_IMODE(os.stat(root / holding[0]).st_mode) == 0o600
    book.order_for(UUID)
    book.receive("n1", "Bearer " + token, _event())
    assert [name for name, data in _files(str(root)).items() if token.encode() in data] == []
    assert all(stat.S_IMODE(os.stat(root / name).st_mode) == 0o600 for name in _files(str(root)))


def test_a_state_directory_others_can_read_is_refused_not_changed(tmp_path):
    root = tmp_path / "state"
    root.mkdir(mode=0o755)
    root.chmod(0o755)
    with pytest.raises(DeployError, match="chmod 700"):
        InstallBook(str(root))
    assert stat.S_IMODE(os.stat(root).st_mode) == 0o755


def test_an_order_for_another_node_or_an_odd_node_name_is_refused(tmp_path):
    book = InstallBook(str(tmp_path / "state"))
    with pytest.raises(DeployError, match="names node 'n1', not n2"):
        book.expect("n2", UUID, _order(new_token()))
    with pytest.raises(DeployError, match="file name"):
        book.expect("../n1", UUID, _order(new_token(), node="../n1"))
    book.expect("n1", UUID, _order(new_token()))
    with pytest.raises(DeployError, match="already has an unserved order for n1"):
        book.expect("n2", UUID, _order(new_token(), node="n2"))


def test_a_request_that_loses_the_race_for_the_order_gets_410_while_the_winner_serves_it(tmp_path):
    book = InstallBook(str(tmp_path / "state"))
    book.expect("n1", UUID, _order(new_token()))
    order = tmp_path / "state" / "orders" / (UUID + ".json")
    order.rename(order.with_name(".serving-%s-0123456789abcdef" % UUID))      # another request claimed it
    assert book.order_for(UUID)[0] == 410


def test_a_second_final_event_that_passed_the_first_check_is_still_refused(tmp_path, monkeypatch):
    from gpufleet.deploy import callbacks
    book, token = InstallBook(str(tmp_path / "state")), new_token()
    book.expect("n1", UUID, _order(token))
    # as if both requests had checked before either recorded: only the claim of final/<run> decides
    monkeypatch.setattr(callbacks.os.path, "exists", lambda path: False)
    assert book.receive("n1", "Bearer " + token, _event("imaged", "done"))[0] == 200
    assert book.receive("n1", "Bearer " + token, _event("failed", "done"))[0] == 403
    monkeypatch.undo()
    assert [e["state"] for e in book.events("n1")] == ["imaged"]


def test_a_new_order_clears_what_a_serve_that_died_mid_way_left(tmp_path):
    book, token = InstallBook(str(tmp_path / "state")), new_token()
    book.expect("n1", UUID, _order(new_token()))
    order = tmp_path / "state" / "orders" / (UUID + ".json")
    order.rename(order.with_name(".serving-%s-0123456789abcdef" % UUID))      # its request died here
    book.expect("n1", UUID, _order(token))
    assert book.order_for(UUID)[0] == 200 and book.order_for(UUID)[0] == 410
    assert os.listdir(tmp_path / "state" / "orders") == []
