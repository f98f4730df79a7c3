"""Tests of coref.io: every format, the schema, bad input and the hardened XML parser."""
import time
import warnings
from pathlib import Path

import pandas as pd
import pytest

import coref
from coref.exceptions import MentionFormatError, SkippedFilesWarning, SkippedRecordsWarning
from coref.io import ALL_COLUMNS, LIST_COLUMNS, MENTION_COLUMNS, OPTIONAL_COLUMNS, LoadReport, load_mentions, \
    write_mentions
from sampling.utils.data import data_path

FIX = Path(__file__).resolve().parent.parent / "data" / "coref"
REPO = Path(__file__).resolve().parents[2]
# ../shared beside the repository (a checkout in /work/main), or two levels up (a worktree in /work/wt/NAME)
SHARED = next((p for p in (REPO / ".." / "shared" / "data" / "coref", REPO / ".." / ".." / "shared" / "data" / "coref")
               if p.is_dir()), REPO / ".." / "shared" / "data" / "coref")


def check_schema(df):
    assert tuple(df.columns) == ALL_COLUMNS == MENTION_COLUMNS + OPTIONAL_COLUMNS
    assert df["mention_id"].is_unique
    for c in ("mention_id", "block", "name", "title", "venue", "affiliation"):
        assert pd.api.types.is_string_dtype(df[c]), c
        assert not df[c].isna().any(), c
    assert str(df["year"].dtype) == "Int64"
    for c in ("gold", "abstract", "paper_id", "orcid"):  # NA when missing, never ""
        assert isinstance(df[c].dtype, pd.StringDtype) and df[c].dtype.na_value is pd.NA, c
        assert not (df[c] == "").any(), c
    for c in LIST_COLUMNS:
        assert all(isinstance(v, list) and all(isinstance(x, str) and x for x in v) for v in df[c]), c


# ----------------------------------------------------------------------------- AMiner
def test_shipped_aminer_counts():
    df, report = load_mentions(data_path("aminer_na"), format="aminer", return_report=True)
    check_schema(df)
    assert len(df) == 7026
    assert df["block"].nunique() == 108
    assert df["gold"].nunique() == 1518
    assert df["gold"].notna().all()
    assert isinstance(report, LoadReport)
    assert (report.n_read, report.n_skipped) == (7026, 0)
    assert len(report.files) == 108
    # the AMiner string "null" never survives as an affiliation
    assert not (df["affiliation"].str.lower() == "null").any()
    # stray '&' were escaped, not dropped
    assert df["affiliation"].str.contains("A&M", regex=False).any()
    assert any("stray '&'" in n[2] for n in report.notes)
    assert any("stray '&'" in n[2] for n in report.repairs)


def test_aminer_fixture_fields():
    df = coref.load_mentions(FIX / "aminer")  # format guessed from *.xml
    check_schema(df)
    assert df["mention_id"].tolist() == ["Bin_Li/0", "Bin_Li/1", "Jie_Tang/0", "Jie_Tang/1", "Jie_Tang/2"]
    jt = df.set_index("mention_id")
    assert jt.at["Jie_Tang/0", "coauthors"] == ["Jing Zhang", "Limin Yao"]
    assert jt.at["Jie_Tang/1", "coauthors"] == ["Jing Zhang"]
    assert jt.at["Jie_Tang/2", "coauthors"] == []
    assert jt.at["Bin_Li/0", "coauthors"] == ["Wei Wang"]  # "B. Li" matched by initial + last name
    assert jt.at["Jie_Tang/0", "title"] == "Mining λ-calculus — a test"
    assert jt.at["Jie_Tang/1", "title"] == "ArnetMiner & friends"
    assert jt.at["Jie_Tang/0", "affiliation"] == "Dept. of Comput. Sci. & Technol., Tsinghua Univ."
    assert jt.at["Jie_Tang/1", "affiliation"] == ""
    assert jt.at["Jie_Tang/2", "affiliation"] == "Texas A&M University"
    assert pd.isna(jt.at["Jie_Tang/2", "year"]) and jt.at["Jie_Tang/0", "year"] == 2008
    assert jt.at["Jie_Tang/0", "gold"] == "Jie_Tang/0" and jt.at["Bin_Li/0", "gold"] == "Bin_Li/0"
    assert jt.at["Jie_Tang/0", "block"] == "Jie_Tang" and jt.at["Jie_Tang/0", "name"] == "Jie Tang"
    assert df["gold"].nunique() == 4  # labels are per file


def test_aminer_single_file():
    df = load_mentions(FIX / "aminer" / "Bin_Li.xml", format="aminer")
    assert len(df) == 2 and set(df["block"]) == {"Bin_Li"}


BOMB = """<?xml version="1.0"?>
<!DOCTYPE lolz [
 <!ENTITY lol "lol">
 <!ENTITY lol1 "&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;&lol;">
 <!ENTITY lol2 "&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;&lol1;">
 <!ENTITY lol3 "&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;&lol2;">
 <!ENTITY lol4 "&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;&lol3;">
 <!ENTITY lol5 "&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;&lol4;">
 <!ENTITY lol6 "&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;&lol5;">
 <!ENTITY lol7 "&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;&lol6;">
 <!ENTITY lol8 "&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;&lol7;">
 <!ENTITY lol9 "&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;&lol8;">
]>
<person><FullName>Lol</FullName><publication><title>&lol9;</title><authors>Lol</authors><label>0</label>
</publication></person>
"""


def test_billion_laughs_refused_quickly(tmp_path):
    bomb = tmp_path / "Bomb_Name.xml"
    bomb.write_text(BOMB)
    t0 = time.perf_counter()
    with pytest.raises(MentionFormatError, match=r"Bomb_Name\.xml:2: refused.*entit") as info:
        load_mentions(tmp_path, format="aminer")
    assert time.perf_counter() - t0 < 1.0
    assert info.value.path.endswith("Bomb_Name.xml")


def test_external_entity_refused(tmp_path):
    xxe = tmp_path / "X.xml"
    xxe.write_text('<?xml version="1.0"?>\n<!DOCTYPE p [<!ENTITY e SYSTEM "file:///etc/passwd">]>\n'
                   "<person><publication><title>&e;</title></publication></person>\n")
    with pytest.raises(MentionFormatError, match="X.xml.*refused"):
        load_mentions(xxe, format="aminer")


def test_defusedxml_is_the_second_line_of_defence():
    # even without the DTD pre-check, the parser itself refuses entity declarations
    import defusedxml.ElementTree as DET
    from defusedxml import DefusedXmlException

    with pytest.raises(DefusedXmlException):
        DET.fromstring(BOMB.split("\n", 1)[1], forbid_dtd=False, forbid_entities=True)


def test_truncated_aminer_file_is_skipped_and_named(tmp_path):
    text = (FIX / "aminer" / "Jie_Tang.xml").read_text()
    bad = tmp_path / "Jie_Tang.xml"
    bad.write_text(text[: len(text) // 2])
    (tmp_path / "Bin_Li.xml").write_text((FIX / "aminer" / "Bin_Li.xml").read_text())
    with pytest.warns(SkippedFilesWarning, match=r"Jie_Tang\.xml:\d+: malformed XML.*truncated"):
        df, report = load_mentions(tmp_path, format="aminer", return_report=True)
    assert set(df["block"]) == {"Bin_Li"} and len(df) == 2
    assert report.n_files_skipped == 1 and report.files_skipped[0][0] == str(bad)
    assert report.files_read == (str(tmp_path / "Bin_Li.xml"),)
    with pytest.raises(MentionFormatError, match=r"Jie_Tang\.xml:\d+: malformed XML.*truncated"):
        load_mentions(tmp_path, format="aminer", strict=True)
    with pytest.raises(MentionFormatError, match=r"Jie_Tang\.xml:\d+: malformed XML.*truncated"):
        load_mentions(bad)  # a single file cannot be skipped: it is the whole input


def test_malformed_aminer_names_file(tmp_path):
    bad = tmp_path / "Bad.xml"
    bad.write_text("<person><publication><title>x</titel></publication></person>")
    with pytest.raises(MentionFormatError, match=r"Bad\.xml:1: malformed XML.*mismatched tag"):
        load_mentions(bad, format="aminer")


def test_aminer_invalid_utf8(tmp_path):
    bad = tmp_path / "U.xml"
    bad.write_bytes(b"<person>\n<FullName>\xff\xfe</FullName></person>")
    with pytest.raises(MentionFormatError, match=r"U\.xml:2: not valid UTF-8"):
        load_mentions(bad, format="aminer")


def test_aminer_bad_year_is_noted_not_dropped(tmp_path):
    text = (FIX / "aminer" / "Bin_Li.xml").read_text().replace("<year>2001</year>", "<year>20x1</year>")
    (tmp_path / "Bin_Li.xml").write_text(text)
    df, report = load_mentions(tmp_path, return_report=True)
    assert len(df) == 2 and pd.isna(df["year"].iloc[0])
    assert any("20x1" in n[2] for n in report.notes)


# ----------------------------------------------------------------------------- Han
def test_han_fixture_merges_train_and_test():
    df = load_mentions(FIX / "han", format="han")
    check_schema(df)
    assert len(df) == 4
    assert sorted(df["block"].unique()) == ["a agarwal", "a gupta"]
    g = df.set_index("mention_id")
    assert g.at["dblp_agupta_train_f0/440", "gold"] == g.at["dblp_agupta_test_f0/441", "gold"] == "dblp_agupta/20"
    assert g.at["dblp_agupta_train_f0/94", "coauthors"] == ["d stahl", "a whinston"]
    assert pd.isna(g.at["dblp_agupta_train_f0/440", "year"])  # year 0 = unknown
    assert g.at["dblp_agupta_train_f0/94", "year"] == 1995
    assert g.at["dblp_agupta_train_f0/94", "venue"] == "oper research"


def test_han_truncated_line_is_counted_and_named(tmp_path):
    good = (FIX / "han" / "dblp_agupta_train_f0.txt").read_text()
    bad = tmp_path / "dblp_agupta_train_f0.txt"
    bad.write_text(good + "77;3;a gupta;x y,z w;some title")  # truncated last record
    with pytest.warns(SkippedRecordsWarning, match=r"skipped 1.*dblp_agupta_train_f0\.txt:3: expected 7"):
        df, report = load_mentions(bad, format="han", return_report=True)
    assert len(df) == 2 and report.n_skipped == 1
    assert report.skipped[0][0].endswith("dblp_agupta_train_f0.txt") and report.skipped[0][1] == 3
    with pytest.raises(MentionFormatError, match=r"dblp_agupta_train_f0\.txt:3: expected 7") as info:
        load_mentions(bad, format="han", strict=True)
    assert info.value.record == 3


def test_han_bad_year_skipped(tmp_path):
    bad = tmp_path / "dblp_xyz_test_f0.txt"
    bad.write_text("1;1;x yz;;t;v;19a9\n2;1;x yz;;t;v;1999\n")
    with pytest.warns(SkippedRecordsWarning):
        df = load_mentions(bad, format="han")
    assert df["mention_id"].tolist() == ["dblp_xyz_test_f0/2"] and df["block"].iat[0] == "x yz"


# ----------------------------------------------------------------------------- S2AND
def test_s2and_fixture():
    df = load_mentions(FIX / "s2and")  # guessed from signatures.json
    check_schema(df)
    g = df.set_index("mention_id")
    assert g.at["1", "name"] == "A K Sattar" and g.at["2", "name"] == "John Smith Jr"
    assert g.at["1", "affiliation"] == "Univ A; Lab B"
    assert g.at["1", "coauthors"] == ["John Smith"] and g.at["0", "coauthors"] == []  # same paper_id
    assert g.at["0", "gold"] == g.at["1", "gold"] == "1" and pd.isna(g.at["3", "gold"])
    assert g.at["3", "block"] == "j smith"


def test_s2and_truncated_json(tmp_path):
    text = (FIX / "s2and" / "signatures.json").read_text()
    (tmp_path / "signatures.json").write_text(text[:200])
    with pytest.raises(MentionFormatError, match=r"signatures\.json:\d+: malformed JSON.*truncated"):
        load_mentions(tmp_path, format="s2and")


# ----------------------------------------------------------------------------- Crossref
def test_crossref_fixture():
    df = load_mentions(FIX / "crossref", format="crossref")
    check_schema(df)
    g = df.set_index("mention_id")
    assert g.at["m1", "coauthors"] == ["Samik Sil"] and g.at["m3", "coauthors"] == ["José García"]
    assert g.at["m4", "block"] == "j garcia" and g.at["m3", "block"] == "l huang"
    assert g.at["m1", "gold"] == g.at["m3", "gold"] == "0000-0001"
    assert g["gold"].isna().sum() == 2
    assert not any("0000-0001" in str(v) for c in ("name", "affiliation", "title") for v in df[c])


def test_crossref_truncated_line_counted(tmp_path):
    text = (FIX / "crossref" / "mentions.jsonl").read_text()
    (tmp_path / "mentions.jsonl").write_text(text + '{"mention_id": "m5", "doi": "10.1/c", "raw_na')
    with pytest.warns(SkippedRecordsWarning, match=r"mentions\.jsonl:5: malformed JSON line"):
        df, report = load_mentions(tmp_path, return_report=True)
    assert len(df) == 4 and report.n_skipped == 1
    with pytest.raises(MentionFormatError, match=r"mentions\.jsonl:5"):
        load_mentions(tmp_path, strict=True)


def test_duplicate_mention_ids_are_counted(tmp_path):
    text = (FIX / "crossref" / "mentions.jsonl").read_text()
    lines = text.splitlines()
    (tmp_path / "mentions.jsonl").write_text("\n".join(lines + [lines[0]]) + "\n")
    with pytest.warns(SkippedRecordsWarning, match="duplicate mention_id 'm1'"):
        df = load_mentions(tmp_path / "mentions.jsonl")
    assert len(df) == 4 and df["mention_id"].is_unique


# ----------------------------------------------------------------------------- CSV / Parquet
@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_table_round_trip(tmp_path, ext):
    df = load_mentions(FIX / "aminer")
    out = write_mentions(df, tmp_path / f"m.{ext}")
    back = load_mentions(out)
    check_schema(back)
    pd.testing.assert_frame_equal(back, df)
    assert not list(tmp_path.glob(".*tmp"))  # atomic write left no temporary file


def test_csv_missing_column_and_bad_rows(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("mention_id,title\n1,t\n")
    with pytest.raises(MentionFormatError, match=r"x\.csv:1: missing required column.*'name'"):
        load_mentions(p)
    p.write_text("mention_id,name,year,coauthors,gold\n1,Ann Lee,2001,Bo Li|Cy Wu,a\n2,,2001,,b\n3,Al Ng,1x,,\n")
    with pytest.warns(SkippedRecordsWarning, match=r"skipped 2.*x\.csv:3: empty mention_id or name"):
        df, report = load_mentions(p, return_report=True)
    check_schema(df)
    assert df["coauthors"].iat[0] == ["Bo Li", "Cy Wu"] and df["block"].iat[0] == "a lee"
    assert [r[1] for r in report.skipped] == [3, 4]


def test_csv_truncated_row_is_counted(tmp_path):
    df = load_mentions(FIX / "aminer")
    p = write_mentions(df, tmp_path / "m.csv")
    text = p.read_text()
    p.write_text(text[: text.rindex(",", 0, len(text) - 30)])  # cut the last row mid-way
    with pytest.warns(SkippedRecordsWarning, match=r"m\.csv:6: too few fields"):
        back, report = load_mentions(p, return_report=True)
    assert len(back) == 4 and report.n_skipped == 1
    pd.testing.assert_frame_equal(back, df.iloc[:4])


def test_parquet_float_years_and_missing_columns(tmp_path):
    p = tmp_path / "x.parquet"
    pd.DataFrame({"mention_id": ["a", "b", "c"], "name": ["Ann Lee", "Bo Li", "Cy Wu"],
                  "year": [1999.0, float("nan"), 2001.5]}).to_parquet(p)
    with pytest.warns(SkippedRecordsWarning, match=r"x\.parquet:2: year .2001.5. is not an integer"):
        df, report = load_mentions(p, return_report=True)
    check_schema(df)
    assert df["year"].tolist()[0] == 1999 and pd.isna(df["year"].iat[1])
    assert df["block"].tolist() == ["a lee", "b li"] and df["gold"].isna().all()
    assert any("absent" in n[2] for n in report.notes)


def test_bad_arguments(tmp_path):
    with pytest.raises(ValueError, match="format parameter of load_mentions"):
        load_mentions(FIX / "aminer", format="bibtex")
    with pytest.raises(FileNotFoundError, match="not found"):
        load_mentions(tmp_path / "nope")
    with pytest.raises(MentionFormatError, match="no mention files in this folder"):
        load_mentions(tmp_path, format="aminer")
    (tmp_path / "a.bib").write_text("")
    with pytest.raises(MentionFormatError, match="cannot guess"):
        load_mentions(tmp_path / "a.bib")


# ----------------------------------------------------------------------------- shared real data
@pytest.mark.skipif(not SHARED.exists(), reason=f"shared data folder {SHARED} absent")
@pytest.mark.parametrize("folder, fmt, counts", [
    ("aminer_na", "aminer", (7026, 108, 1518, 7026)),
    ("han_dblp_lbd", "han", (2075, 4, 153, 2075)),
    ("s2and_qian", "s2and", (6542, 606, 1188, 6542)),
    ("crossref_orcid_gold", "crossref", (10000, None, 292, 1324)),
], ids=["aminer", "han", "s2and", "crossref"])
def test_shared_datasets(folder, fmt, counts):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedRecordsWarning)
        df, report = load_mentions(SHARED / folder, format=fmt, return_report=True)
    check_schema(df)
    n, n_blocks, n_gold, n_labelled = counts
    assert len(df) == n and report.n_skipped == 0
    if n_blocks is not None:
        assert df["block"].nunique() == n_blocks
    assert df["gold"].nunique() == n_gold
    assert df["gold"].notna().sum() == n_labelled
    if fmt == "han":
        assert df.groupby("block")["gold"].nunique().to_dict() == {
            "a agarwal": 7, "a gupta": 26, "a oliveira": 20, "j lee": 100}
    if fmt == "crossref":
        assert (df["coauthors"].map(len) > 0).mean() > 0.9
        # counts of SOURCES.md: 2,619 mentions carry an ORCID, 5,069 an affiliation; DOIs kept as paper_id
        assert df["orcid"].notna().sum() == 2619 and (df["affiliations"].map(len) > 0).sum() == 5069
        assert df["paper_id"].nunique() == 1072
        assert (df.loc[df["gold"].notna(), "gold"] == df.loc[df["gold"].notna(), "orcid"]).all()
        assert [Path(p).name for p, _ in report.files_ignored] == ["splits.json"]
    if fmt == "s2and":
        assert (df["affiliations"].map(len) > 0).sum() == 4994 and df["paper_id"].notna().all()
    if fmt == "aminer":
        assert df["paper_id"].notna().all() and df["abstract"].isna().all()  # this dump has no abstracts
    if fmt == "han":
        assert df["paper_id"].isna().all() and (df["keywords"].map(len) == 0).all()
