"""Package-level API of ``sampling``: ``__version__``, ``sampling.datasets`` and the common
``--quiet`` flag of the sub-commands."""
import argparse
import re
from importlib import metadata
from pathlib import Path

import pytest

import sampling
from sampling import cli, datasets
from sampling.utils.data import data_path

ROOT = Path(__file__).resolve().parents[2]


def test_version_matches_pyproject_and_the_installed_distribution():
    text = (ROOT / "pyproject.toml").read_text()
    declared = re.search(r'^version\s*=\s*"([^"]+)"', text, re.M).group(1)
    assert sampling.__version__ == declared
    try:
        installed = metadata.version("racing-inference")
    except metadata.PackageNotFoundError:
        installed = None
    if installed is not None:
        assert installed == declared, "reinstall: the installed distribution is another version"
    assert cli.version() == sampling.__version__


def test_datasets_is_reachable_after_import_sampling():
    assert sampling.datasets is datasets
    assert "datasets" in dir(sampling)


def test_list_and_locate_shipped_uai_models():
    names = datasets.list_uai()
    assert names == sorted(names)
    assert {"BN_0", "pedigree1", "pedigree20", "pedigree23"} <= set(names)
    p = datasets.uai_path("pedigree1")
    assert p == data_path("uai", "pedigree", "pedigree1.uai")
    assert datasets.uai_path("pedigree1.uai") == p
    assert datasets.uai_evidence_path("BN_0") == data_path("uai", "bn", "BN_0.uai.evid")
    assert datasets.uai_evidence_path("pedigree1") is None
    with pytest.raises(FileNotFoundError, match="no shipped UAI model named 'nope'; shipped: BN_0, pedigree1"):
        datasets.uai_path("nope")


def test_resolve_uai_prefers_an_existing_path(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    own = tmp_path / "pedigree1.uai"
    own.write_text("MARKOV\n0\n0\n")
    assert datasets.resolve_uai("pedigree1.uai") == Path("pedigree1.uai")  # the file here wins
    assert datasets.resolve_uai("pedigree1") == datasets.uai_path("pedigree1")
    with pytest.raises(FileNotFoundError, match="neither a file nor the name of a shipped UAI model; shipped: BN_0"):
        datasets.resolve_uai("sub/pedigree1.uai")  # a path with a folder is never taken as a name


def test_shipped_returns_series():
    names = datasets.list_returns()
    assert "sp500_daily_arch" in names and "spy_1min_2011-01_pyalgotrade" in names
    p = datasets.returns_path("sp500_daily_arch")
    assert p.name == "sp500_daily_arch.csv.gz" and p.exists()
    assert datasets.returns_path("sp500_daily_arch.csv.gz") == p
    with pytest.raises(FileNotFoundError, match="no shipped price series named 'x'; shipped: sp500_daily_arch"):
        datasets.returns_path("x")


@pytest.mark.parametrize("module", ["sampling.arch.cli", "sampling.synthetic", "sampling.bounds.cli"])
def test_quiet_is_the_progress_flag_of_every_command(module):
    import importlib

    mod = importlib.import_module(module)
    parser = argparse.ArgumentParser()
    mod.add_arguments(parser)
    base = ["pedigree1"] if module == "sampling.bounds.cli" else []
    assert parser.parse_args(base + ["--quiet"]).quiet is True
    assert parser.parse_args(base).quiet is False
    if module != "sampling.bounds.cli":  # the old spelling still works, hidden from --help
        assert parser.parse_args(base + ["--no-progress"]).quiet is True
        assert "--no-progress" not in parser.format_help()
        assert "--quiet" in parser.format_help()


PACKAGES = ["sampling", "sampling.bounds", "sampling.arch", "sampling.utils", "coref", "coref.confidence",
            "coref.model", "coref.gibbs", "coref.encoding", "coref.outputs", "coref.jobs", "coref.io", "coref.factors"]


@pytest.mark.parametrize("package", PACKAGES)
def test_no_exported_function_shares_its_name_with_a_submodule(package):
    """Importing a submodule sets the package attribute of that name to the module, so an export
    of the same name (``sampling.bounds.marginals`` once was both) turns into a module."""
    import importlib
    import pkgutil

    pkg = importlib.import_module(package)
    submodules = {m.name for m in pkgutil.iter_modules(pkg.__path__)}
    exported = set(getattr(pkg, "__all__", ())) | set(getattr(pkg, "_EXPORTS", {}))
    exported -= set(getattr(pkg, "_SUBPACKAGES", ())) | set(getattr(pkg, "_SUBMODULES", ()))
    assert not (submodules & exported)


def test_marginals_is_the_function_after_its_module_is_imported():
    import sampling.bounds.marginal_bounds  # noqa: F401
    from sampling.bounds import marginals

    assert callable(marginals) and marginals.__module__ == "sampling.bounds.marginal_bounds"
