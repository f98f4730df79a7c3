import pytest

from sampling.utils.cli import lazy_exports, route


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


def test_coref_version(capsys):
    import tomllib
    from pathlib import Path

    import coref
    from coref.cli import main

    assert main(["--version"]) == 0
    assert capsys.readouterr().out.strip() == f"coref (racing-inference) {coref.__version__}"
    meta = tomllib.loads((Path(__file__).resolve().parents[1] / "pyproject.toml").read_text())
    assert meta["project"]["version"] == coref.__version__


def test_coref_datasets_reach_the_shipped_data_from_any_directory(tmp_path, monkeypatch):
    from coref import datasets

    monkeypatch.chdir(tmp_path)
    p = datasets.data_path("aminer_na")
    assert p.is_dir() and len(list(p.glob("*.xml"))) == 108
    assert datasets.available() == ["aminer_na"]
    assert (datasets.default_model_path() / "manifest.json").is_file()
