from gpufleet import main as cli_main


def test_no_command_prints_help_and_returns_2(capsys):
    assert cli_main.main([]) == 2
    assert "usage: gpufleet" in capsys.readouterr().out
