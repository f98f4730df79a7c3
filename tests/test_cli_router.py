import pytest

from sampling._cli import lazy_exports, route


def test_route_reports_missing_module(capsys):
    rc = route("prog", "desc", {"x": ("no_such_module_xyz", "help")}, ["x"])
    assert rc == 2
    assert "prog x: not available" in capsys.readouterr().err


def test_lazy_exports_resolves_and_caches():
    ns = {}
    getattr_, dir_ = lazy_exports("pkg", {"sqrt": "math"}, ns)
    import math

    assert getattr_("sqrt") is math.sqrt and ns["sqrt"] is math.sqrt
    assert "sqrt" in dir_()
    with pytest.raises(AttributeError, match="module 'pkg' has no attribute 'cos'"):
        getattr_("cos")
