"""UAI reader / writer and evidence files."""
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings, strategies as st

from sampling.utils.data import data_path
from sampling.bounds.exact import log_partition_enumerate
from sampling.bounds.model import random_model
from sampling.bounds.uai import read_evidence, read_uai, write_evidence, write_uai
from sampling.exceptions import UAIFormatError

DATA = Path(__file__).resolve().parent.parent / "data"
TINY = (
    "MARKOV\n3\n2 2 3\n3\n1 0\n2 0 1\n2 1 2\n\n"
    "2\n 0.25 0.75\n4\n 1.0 2.0\n 0.5 0.0\n6\n 1.0 2.0 3.0\n 4.0 5.0 6.0\n"
)


def _write(tmp_path, text, name="m.uai"):
    p = tmp_path / name
    p.write_text(text)
    return p


def test_read_tiny_fixture():
    m = read_uai(DATA / "bounds_tiny.uai")
    assert m.cards.tolist() == [2, 2, 3]
    assert [f.scope for f in m.factors] == [(0,), (0, 1), (1, 2)]
    # last scope variable changes fastest
    np.testing.assert_allclose(np.exp(m.factors[2].log_values), [[1, 2, 3], [4, 5, 6]])
    assert m.factors[1].log_values[1, 1] == -np.inf
    # sum_x2 f2(x1, x2) is 6 (x1 = 0) and 15 (x1 = 1)
    z = 0.25 * (1.0 * 6 + 2.0 * 15) + 0.75 * (0.5 * 6 + 0.0 * 15)
    assert log_partition_enumerate(m) == pytest.approx(np.log(z))


def test_read_with_evidence_file():
    m = read_uai(DATA / "bounds_tiny.uai", evidence=DATA / "bounds_tiny.uai.evid")
    assert m.cards.tolist() == [2, 2, 1]
    z = 0.25 * (1.0 * 2 + 2.0 * 5) + 0.75 * (0.5 * 2)
    assert log_partition_enumerate(m) == pytest.approx(np.log(z))
    m2 = read_uai(DATA / "bounds_tiny.uai", evidence={2: 1})
    assert log_partition_enumerate(m2) == pytest.approx(np.log(z))


def test_whitespace_is_free(tmp_path):
    text = " ".join(TINY.split())  # everything on one line
    m = read_uai(_write(tmp_path, text))
    text2 = "\n\n".join(TINY.split()) + "\n\n"  # one token per line
    m2 = read_uai(_write(tmp_path, text2, "m2.uai"))
    assert log_partition_enumerate(m) == pytest.approx(log_partition_enumerate(m2))
    m3 = read_uai(_write(tmp_path, TINY.replace("MARKOV", "BAYES").replace(" ", "\t"), "m3.uai"))
    assert log_partition_enumerate(m3) == pytest.approx(log_partition_enumerate(m))


@pytest.mark.parametrize(
    "old, new, match",
    [
        ("MARKOV", "MRF", r"m\.uai:1: the header must be MARKOV or BAYES"),
        ("2 2 3\n3", "2 0 3\n3", r"m\.uai:3: the cardinality of variable 1 must be >= 1"),
        ("2 1 2\n", "2 1 7\n", r"m\.uai:7: a variable of factor 2 must be <= 2"),
        ("2 1 2\n", "2 1 1\n", r"m\.uai:7: the scope of factor 2 repeats"),
        ("4\n 1.0 2.0", "5\n 1.0 2.0", r"m\.uai:11: factor 1 over variables \(0, 1\) must have 4 entries"),
        (" 0.5 0.0", " -0.5 0.0", r"m\.uai:13: the table of factor 1 entry 2 is '-0.5'"),
        (" 4.0 5.0 6.0", " 4.0 nan 6.0", r"m\.uai:16: the table of factor 2 entry 4 is 'nan'"),
        (" 4.0 5.0 6.0", " 4.0 5.0 abc", r"m\.uai:16: expected a number in the table of factor 2; got 'abc'"),
        (" 4.0 5.0 6.0\n", " 4.0 5.0 6.0\n7\n", r"m\.uai:17: unexpected trailing token '7'"),
        ("\n3\n1 0", "\nx\n1 0", r"m\.uai:4: expected an integer \(the number of factors\)"),
    ],
    ids=["header", "card0", "var-range", "repeat", "count", "negative", "nan", "not-number", "trailing", "not-int"],
)
def test_format_errors_name_file_and_line(tmp_path, old, new, match):
    assert old in TINY
    p = _write(tmp_path, TINY.replace(old, new, 1))
    with pytest.raises(UAIFormatError, match=match) as info:
        read_uai(p)
    assert info.value.line is not None and info.value.path.endswith("m.uai")


def test_truncated_file_reports_last_line(tmp_path):
    p = _write(tmp_path, TINY[: TINY.index(" 4.0")])
    with pytest.raises(UAIFormatError, match=r"m\.uai:15: unexpected end of file: the table of factor 2 needs 6"):
        read_uai(p)
    p = _write(tmp_path, "MARKOV\n3\n2 2\n", "short.uai")
    with pytest.raises(UAIFormatError, match=r"short\.uai:3: unexpected end of file: expected the cardinality of variable 2"):
        read_uai(p)


def test_evidence_formats(tmp_path):
    assert read_evidence(_write(tmp_path, "2 0 1 2 2\n", "a.evid")) == {0: 1, 2: 2}
    assert read_evidence(_write(tmp_path, "2\n 0 1\n\n2 2", "b.evid")) == {0: 1, 2: 2}
    # older form: number of samples, then one record per sample
    assert read_evidence(_write(tmp_path, "1\n2 0 1 2 2\n", "c.evid")) == {0: 1, 2: 2}
    old2 = _write(tmp_path, "2\n1 0 1\n1 1 0\n", "d.evid")
    assert read_evidence(old2, sample=1) == {1: 0}
    assert read_evidence(_write(tmp_path, "", "e.evid")) == {}
    assert read_evidence(_write(tmp_path, "0\n", "f.evid")) == {}


def test_evidence_errors(tmp_path):
    m = read_uai(DATA / "bounds_tiny.uai")
    with pytest.raises(UAIFormatError, match=r"g\.evid:2: evidence value 3 of variable 2 is out of range"):
        read_evidence(_write(tmp_path, "1\n2 3\n", "g.evid"), model=m)
    with pytest.raises(UAIFormatError, match=r"h\.evid:1: evidence variable 7 is out of range"):
        read_uai(DATA / "bounds_tiny.uai", evidence=_write(tmp_path, "1 7 0", "h.evid"))
    with pytest.raises(UAIFormatError, match=r"i\.evid:1: evidence variable 0 is observed twice"):
        read_evidence(_write(tmp_path, "2 0 1 0 1", "i.evid"))
    with pytest.raises(UAIFormatError, match=r"j\.evid:1: .*fits neither"):
        read_evidence(_write(tmp_path, "1 0 1 1 1 1", "j.evid"))


@settings(max_examples=30, deadline=None, derandomize=True, database=None)
@given(seed=st.integers(0, 2**31 - 1), n_vars=st.integers(0, 6), n_factors=st.integers(0, 8),
       kind=st.sampled_from(["MARKOV", "BAYES"]))
def test_write_then_read_round_trip(tmp_path_factory, seed, n_vars, n_factors, kind):
    m = random_model(n_vars, n_factors if n_vars else 0, max_card=4, zero_prob=0.2, scale=3.0, rng=seed)
    p = tmp_path_factory.mktemp("rt") / "m.uai"
    write_uai(m, p, kind=kind)
    r = read_uai(p)
    assert r.cards.tolist() == m.cards.tolist()
    assert len(r.factors) == len(m.factors)
    for a, b in zip(m.factors, r.factors):
        assert a.scope == b.scope
        np.testing.assert_array_equal(np.isinf(a.log_values), np.isinf(b.log_values))
        np.testing.assert_allclose(a.log_values, b.log_values, rtol=1e-13, atol=1e-13)


def test_write_evidence_round_trip(tmp_path):
    p = tmp_path / "x.evid"
    write_evidence({3: 1, 0: 2}, p)
    assert p.read_text().strip() == "2 0 2 3 1"
    assert read_evidence(p) == {0: 2, 3: 1}


def test_write_rejects_unknown_kind(tmp_path):
    with pytest.raises(ValueError, match="MARKOV"):
        write_uai(random_model(2, 1, rng=0), tmp_path / "x.uai", kind="CSP")


def test_shipped_bn0_reads():
    m = read_uai(data_path("uai", "bn", "BN_0.uai"))
    ev = read_evidence(data_path("uai", "bn", "BN_0.uai.evid"), model=m)
    assert m.n_vars == 100 and len(ev) == 26


def test_write_uai_takes_the_model_first_and_names_the_old_order(tmp_path):
    m = random_model(3, 2, rng=0)
    p = tmp_path / "m.uai"
    with pytest.raises(TypeError, match=r"write_uai takes the model first, then the path .* order of older versions"):
        write_uai(p, m)
    with pytest.raises(TypeError, match=r"write_evidence takes the evidence first"):
        write_evidence(str(tmp_path / "e.evid"), {0: 1})
    with pytest.raises(TypeError, match="must be a GraphicalModel"):
        write_uai("not a model", 3)
    write_uai(m, p)
    assert read_uai(p).n_factors == m.n_factors
