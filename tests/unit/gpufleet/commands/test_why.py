"""``gpufleet why``: the exit codes its help lists are the ones its answers exit with."""
from gpufleet.commands import why as why_command
from gpufleet.view.answer import Answer, exit_code
from gpufleet.view.categories import LAYER_NAMES, LAYERS


def test_each_blocking_layer_exits_with_a_code_the_help_names():
    documented = dict(why_command.EXIT_CODES)
    for layer in LAYERS:
        code = exit_code(Answer("7", "job", layer, True, "blocked"))
        if code:
            assert documented[code] == "blocked at %s %s" % (layer, LAYER_NAMES[layer])
    assert {11, 12, 13} <= set(documented)        # L1, L2, L3 as docs/fleet-view.md lists them
    assert exit_code(Answer("7", "job", None, False, "runs")) == 0 and 0 in documented


def test_every_code_beyond_usage_is_one_an_answer_can_exit_with():
    reachable = {exit_code(Answer("7", "job", layer, True, "x")) for layer in LAYERS} | {0, 1, 2}
    assert set(dict(why_command.EXIT_CODES)) <= reachable
