"""Tests of coref.blocking: name keys, given / name / canopy blocks, no in-place edits."""
import pandas as pd
import pytest

from coref.blocking import assign_blocks, name_key, normalize_name


@pytest.mark.parametrize("name, key", [
    ("Ajay Gupta", "a gupta"),
    ("Ajay K. Gupta", "a gupta"),
    ("A. Gupta", "a gupta"),
    ("José  García-Pérez", "j garcia-perez"),
    ("Gupta, Ajay", "a gupta"),
    ("J.R.R. Tolkien", "j tolkien"),
    ("ÅSA Ødegård", "a ødegard"),  # ø is a letter of its own, not an accent
    ("Madonna", "madonna"),
    ("", ""),
    (None, ""),
], ids=lambda x: repr(x))
def test_name_key(name, key):
    assert name_key(name) == key


def test_normalize_name():
    assert normalize_name("  Müller-Lüdenscheidt,  Hans-Jürgen ") == "muller-ludenscheidt hans-jurgen"
    assert normalize_name(float("nan")) == ""
    # one normaliser for blocks and features: apostrophes dropped, hyphens kept
    for variant in ("O'Brien", "O\u2019Brien", "OBrien", "o'brien"):
        assert normalize_name(variant) == "obrien"
    for dash in "-\u2010\u2011\u2013\u2212":
        assert normalize_name(f"Jian{dash}Xin Tang") == "jian-xin tang"
    assert normalize_name("Jian\u00adxin Tang") == "jianxin tang"  # soft hyphen
    assert name_key("Sean O'Brien") == name_key("Sean OBrien") == "s obrien"


def frame():
    return pd.DataFrame({
        "mention_id": [f"m{i}" for i in range(9)],
        "name": ["Ajay Gupta", "A. Gupta", "Ajay K. Gupta", "Jie Tang", "J. Tang", "Jie Tang",
                 "Jose Garcia", "José García", "Robert Smith"],
        "block": ["g1", "g1", "", "t", "t", None, "x", "x", "s"],
    })


def test_given_keeps_block_and_fills_missing():
    df = frame()
    before = df.copy()
    out = assign_blocks(df, method="given")
    pd.testing.assert_frame_equal(df, before)  # not modified in place
    assert out is not df
    assert out["block"].tolist() == ["g1", "g1", "a gupta", "t", "t", "j tang", "x", "x", "s"]


def test_name_method():
    out = assign_blocks(frame(), method="name")
    assert out["block"].tolist() == ["a gupta"] * 3 + ["j tang"] * 3 + ["j garcia"] * 2 + ["r smith"]


def test_canopy_groups_variants_and_separates_others():
    # initials vs full first names are ~0.6 cosine-similar in char n-grams: loosen the thresholds
    out = assign_blocks(frame().drop(columns="block"), method="canopy", loose=0.5, tight=0.8)
    b = out["block"]
    assert b.iloc[0] == b.iloc[1] == b.iloc[2]
    assert b.iloc[3] == b.iloc[4] == b.iloc[5]
    assert b.iloc[6] == b.iloc[7]  # accents stripped before the n-grams
    assert len({b.iloc[0], b.iloc[3], b.iloc[6], b.iloc[8]}) == 4
    assert all(x.startswith("canopy:") for x in b)
    # deterministic
    again = assign_blocks(frame().drop(columns="block"), method="canopy", loose=0.5, tight=0.8)
    pd.testing.assert_series_equal(b, again["block"])
    strict = assign_blocks(frame().drop(columns="block"), method="canopy", variants=False)["block"]
    assert strict.iloc[6] == strict.iloc[7] and strict.iloc[0] == strict.iloc[2] != strict.iloc[1]


def test_canopy_keeps_name_variants_together():
    # pure n-gram canopies split an initial from its full first name (0.6 similar) ...
    df = frame().drop(columns="block")
    pure = assign_blocks(df, method="canopy", variants=False)["block"]
    assert pure.iloc[0] != pure.iloc[1]
    # ... name-variant canopies (the default) join every name with the same initial + last name
    b = assign_blocks(df, method="canopy")["block"]
    keys = df["name"].map(name_key)
    for k in keys.unique():
        assert b[keys == k].nunique() == 1
    assert len({b.iloc[0], b.iloc[3], b.iloc[6], b.iloc[8]}) == 4  # other names stay apart
    extra = pd.DataFrame({"name": ["J. Wang", "Jie Wang", "Jiang Wang", "Mary Smith", "J Wang"]})
    eb = assign_blocks(extra, method="canopy", loose=1.0, tight=1.0)["block"]
    assert eb.iloc[0] == eb.iloc[1] == eb.iloc[2] == eb.iloc[4] != eb.iloc[3]
    assert assign_blocks(extra, method="canopy", loose=1.0, tight=1.0, variants=False)["block"].nunique() == 4


def test_canopy_thresholds_control_granularity():
    df = frame().drop(columns="block")
    coarse = assign_blocks(df, method="canopy", loose=0.0, tight=0.0)
    assert coarse["block"].nunique() == 1  # everything similar enough: one canopy
    fine = assign_blocks(df, method="canopy", loose=1.0, tight=1.0, variants=False)
    assert fine["block"].nunique() == df["name"].map(normalize_name).nunique()


@pytest.mark.parametrize("kwargs, exc, match", [
    (dict(method="soundex"), ValueError, "method parameter of assign_blocks"),
    (dict(method="canopy", loose=0.9, tight=0.5), ValueError, "loose <= tight"),
], ids=["method", "thresholds"])
def test_errors(kwargs, exc, match):
    with pytest.raises(exc, match=match):
        assign_blocks(frame(), **kwargs)


def test_missing_columns():
    with pytest.raises(TypeError, match="must be a pandas DataFrame"):
        assign_blocks([1, 2])
    with pytest.raises(ValueError, match="needs a 'block' column"):
        assign_blocks(frame().drop(columns="block"), method="given")
    with pytest.raises(ValueError, match="needs a 'name' column"):
        assign_blocks(frame().drop(columns="name"), method="name")
