import pytest

from sampling._cli import lazy_exports, route


def test_route_reports_missing_module(capsys):
    rc = route("prog", "desc", {"x": ("no_such_module_xyz", "help")}, ["x"])
    assert rc == 2
    assert "prog x: not available" in capsys.readouterr().err


def test_route_imports_only_the_chosen_subcommand(capsys):
    table = {"ok": ("tests_cli_fake_ok", "fine"), "broken": ("no_such_module_xyz", "broken")}
    import sys
    import types

    mod = types.ModuleType("tests_cli_fake_ok")
    mod.add_arguments = lambda p: p.add_argument("--n", type=int, default=1)
    mod.main = lambda args: args.n + 40
    sys.modules["tests_cli_fake_ok"] = mod
    try:
        assert route("prog", "desc", table, ["ok", "--n", "2"]) == 42
    finally:
        del sys.modules["tests_cli_fake_ok"]


def test_lazy_exports_resolves_and_caches():
    ns = {}
    getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"}, ns)
    import math

    assert getattr_("sqrt") is math.sqrt and ns["sqrt"] is math.sqrt
    assert "sqrt" in dir_()
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'cos'"):
        getattr_("cos")
