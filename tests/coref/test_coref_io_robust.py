"""Tests of coref.io on input as found in the wild: folders with bad, foreign or mixed files,
declared encodings, illegal control characters, the optional columns, and list columns in CSV."""
import json
import shutil
import warnings
from pathlib import Path

import numpy as np
import pandas as pd
import pytest

import coref.cli
from coref.exceptions import (InputWarning, MentionFormatError, MixedFormatsError, SkippedFilesWarning,
                              SkippedRecordsWarning)
from coref.io import (ALL_COLUMNS, FORMATS, IDENTIFIER_COLUMNS, LIST_COLUMNS, MENTION_COLUMNS, OPTIONAL_COLUMNS,
                      LoadReport, add_optional_columns, empty_mentions, load_mentions, write_mentions)
from sampling.utils.data import data_path

FIX = Path(__file__).resolve().parent.parent / "data" / "coref"
# five of the smallest shipped AMiner files (47 mentions)
FIVE = ("Bob_Johnson", "Charles_Smith", "Hong_Xie", "J._Guo", "Thomas_D._Taylor")


def five_names(folder):
    folder.mkdir(exist_ok=True)
    for n in FIVE:
        shutil.copy(data_path("aminer_na", f"{n}.xml"), folder / f"{n}.xml")
    return folder


def put_form_feed(path, nth_title=1):
    """Insert a form feed at the start of the nth <title> text; returns its 1-based line."""
    raw = path.read_bytes()
    pos = -1
    for _ in range(nth_title):
        pos = raw.index(b"<title>", pos + 1)
    pos += len(b"<title>")
    path.write_bytes(raw[:pos] + b"\x0c" + raw[pos:])
    return raw.count(b"\n", 0, pos) + 1


def quiet_load(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("error", SkippedRecordsWarning)  # nothing may be skipped here
        return load_mentions(*args, **kw)


# ----------------------------------------------------------------------------- one definition each
def test_public_constants():
    assert FORMATS == ("aminer", "han", "s2and", "crossref", "csv", "parquet")
    assert MENTION_COLUMNS == ("mention_id", "block", "name", "coauthors", "title", "venue", "year",
                               "affiliation", "gold")
    assert OPTIONAL_COLUMNS == ("abstract", "keywords", "affiliations", "paper_id", "orcid", "references")
    assert ALL_COLUMNS == MENTION_COLUMNS + OPTIONAL_COLUMNS
    assert set(LIST_COLUMNS) == {"coauthors", "keywords", "affiliations", "references"}
    assert {"orcid", "gold", "paper_id", "mention_id"} == set(IDENTIFIER_COLUMNS)
    import coref
    assert coref.MENTION_COLUMNS is MENTION_COLUMNS and coref.load_mentions is load_mentions
    assert tuple(empty_mentions().columns) == ALL_COLUMNS


# ----------------------------------------------------------------------------- malformed files in a folder
def test_form_feeds_are_repaired_counted_and_every_mention_clustered(tmp_path):
    folder = five_names(tmp_path / "five")
    clean = quiet_load(folder)
    lines = {n: put_form_feed(folder / f"{n}.xml", k + 1) for k, n in enumerate(FIVE[:3])}
    df, report = quiet_load(folder, return_report=True)
    # nothing lost, nothing changed: the form feeds were removed, not the records
    pd.testing.assert_frame_equal(df, clean)
    assert report.n_read == len(df) == 47 and report.n_skipped == 0 and report.n_files_skipped == 0
    assert len(report.files_read) == 5
    repaired = {(Path(p).stem, r): why for p, r, why in report.repairs if "control character" in why}
    assert set(repaired) == {(n, lines[n]) for n in FIVE[:3]}
    assert all("removed 1 illegal XML control character(s) (U+000C x1)" in why for why in repaired.values())
    # the summary names the repaired files (a count and the list); every repair is in the details
    summary, details = report.summary(), report.repair_details()
    assert "3 repair(s) in 3 file(s)" in summary and "removed" not in summary
    assert set(report.repaired_files) == {str(folder / f"{n}.xml") for n in FIVE[:3]}
    for n in FIVE[:3]:
        assert f"{n}.xml" in summary
        assert f"{n}.xml:{lines[n]}: removed 1 illegal XML control character" in details
    # end to end: `coref run` clusters every mention of the five files
    out = tmp_path / "out"
    assert coref.cli.main(["run", "--data", str(folder), "--folds", "2", "--sweeps", "2", "--sampler", "racing",
                           "--quiet", "--out", str(out)]) == 0
    clusters = pd.read_csv(out / "clusters.csv", dtype=str)
    assert sorted(clusters["mention_id"]) == sorted(clean["mention_id"])


def test_character_references_to_control_characters_are_repaired(tmp_path):
    text = (FIX / "aminer" / "Bin_Li.xml").read_text()
    line = text.count("\n", 0, text.index("<title>")) + 1
    (tmp_path / "Bin_Li.xml").write_text(text.replace("<title>", "<title>&#12;&#x1F;", 1))
    df, report = quiet_load(tmp_path, return_report=True)
    assert len(df) == 2 and "\x0c" not in df["title"].iat[0]
    assert [why for _, _, why in report.repairs if "control" in why] == [
        f"removed 2 illegal XML control character(s) (U+000C x1, U+001F x1) on line {line}"]


def test_truly_broken_file_is_skipped_named_and_counted(tmp_path):
    folder = five_names(tmp_path)
    put_form_feed(folder / "Hong_Xie.xml")  # repaired
    broken = folder / "J._Guo.xml"
    raw = broken.read_text(encoding="utf-8")
    k = raw.index("</title>", raw.index("</title>") + 1)
    broken.write_text(raw[:k] + "</titel>" + raw[k + len("</title>"):], encoding="utf-8")
    line = raw.count("\n", 0, k) + 1
    with pytest.warns(SkippedFilesWarning, match=rf"J\._Guo\.xml:{line}: malformed XML: mismatched tag"):
        df, report = load_mentions(folder, return_report=True)
    assert set(df["block"]) == set(FIVE) - {"J._Guo"}
    assert report.n_files_skipped == 1 and report.skipped_files == report.files_skipped
    path, rec, why = report.files_skipped[0]
    assert (path, rec) == (str(broken), line) and why.startswith("malformed XML: mismatched tag")
    assert str(broken) not in report.files_read and len(report.files_read) == 4
    assert any(p.endswith("Hong_Xie.xml") for p, _, _ in report.repairs)
    assert "skipped 0 record(s) and 1 file(s)" in report.summary()
    d = report.to_dict()
    json.dumps(d)
    assert d["n_files_skipped"] == 1 and d["files_skipped"][0]["record"] == line
    # strict: the bad file is fatal
    with pytest.raises(MentionFormatError, match=rf"J\._Guo\.xml:{line}: malformed XML") as info:
        load_mentions(folder, strict=True)
    assert info.value.path == str(broken) and info.value.record == line


def test_every_file_broken_is_an_error_naming_them(tmp_path):
    (tmp_path / "A_B.xml").write_text("<person><publication></person>")
    (tmp_path / "C_D.xml").write_bytes(b"<person>\n<FullName>\xff</FullName></person>")
    with pytest.raises(MentionFormatError, match=r"none of the 2 aminer files could be read: .*A_B\.xml:1: "
                                                 r"malformed XML.*C_D\.xml:2: not valid UTF-8"):
        load_mentions(tmp_path)


def test_record_level_problems_keep_skip_and_strict(tmp_path):
    text = (FIX / "han" / "dblp_agupta_train_f0.txt").read_text()
    (tmp_path / "dblp_agupta_train_f0.txt").write_text(text + "9;1;a gupta;;t\n")
    with pytest.warns(SkippedRecordsWarning, match=r"dblp_agupta_train_f0\.txt:3: expected 7"):
        df, report = load_mentions(tmp_path, return_report=True)
    assert report.n_skipped == 1 and report.n_files_skipped == 0 and len(df) == 2
    with pytest.raises(MentionFormatError, match=r":3: expected 7"):
        load_mentions(tmp_path, strict=True)


def test_han_file_not_utf8_is_skipped_in_a_folder(tmp_path):
    for f in (FIX / "han").iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "kisti_aagarwal_train_f0.txt").write_bytes(b"1;1;a agarwal;;t\xe9;v;2001\n")
    with pytest.warns(SkippedFilesWarning, match=r"kisti_aagarwal_train_f0\.txt:1: not valid UTF-8"):
        df, report = load_mentions(tmp_path, return_report=True)
    assert set(df["block"]) == {"a gupta"} and report.n_files_skipped == 1


# ----------------------------------------------------------------------------- which files are read
def test_upper_case_extension_is_read_and_other_entries_listed(tmp_path):
    shutil.copy(FIX / "aminer" / "Bin_Li.xml", tmp_path / "Bin_Li.xml")
    shutil.copy(data_path("aminer_na", "Hong_Xie.xml"), tmp_path / "Hong_Xie.XML")
    (tmp_path / "README.md").write_text("about")
    (tmp_path / "README.txt").write_text("about")  # .txt is Han data, but a README is documentation
    (tmp_path / ".DS_Store").write_bytes(b"\0\0\0\1Bud1")
    (tmp_path / "notes.pdf").write_bytes(b"%PDF")
    (tmp_path / "old").mkdir()
    df, report = quiet_load(tmp_path, return_report=True)
    assert set(df["block"]) == {"Bin_Li", "Hong_Xie"} and len(df) == 2 + 12
    assert report.files_read == (str(tmp_path / "Bin_Li.xml"), str(tmp_path / "Hong_Xie.XML"))
    ignored = {Path(p).name: why for p, why in report.ignored}
    assert ignored == {".DS_Store": "hidden file", "README.md": "documentation, not data",
                       "README.txt": "documentation, not data", "old": "a folder (sub-folders are not searched)",
                       "notes.pdf": ignored["notes.pdf"]}
    assert ignored["notes.pdf"].startswith("extension .pdf is not a mention format")
    assert "ignored 5 other file(s)" in report.summary() and "notes.pdf: extension .pdf" in report.summary(limit=9)
    # every entry of the folder is accounted for
    assert {Path(p).name for p in report.files_read} | set(ignored) == {p.name for p in tmp_path.iterdir()}
    # a single file with an upper-case extension is guessed too
    assert len(quiet_load(tmp_path / "Hong_Xie.XML")) == 12


def test_shipped_folder_lists_its_sources_file():
    df, report = quiet_load(data_path("aminer_na"), return_report=True)
    assert len(df) == 7026 and len(report.files_read) == 108
    assert [(Path(p).name, why) for p, why in report.files_ignored] == [("SOURCES.md", "documentation, not data")]


@pytest.mark.parametrize("other", ["m.parquet", "x.json", "y.txt"])
def test_mixed_formats_are_an_error_naming_the_files(tmp_path, other):
    df = quiet_load(FIX / "aminer")
    if other.endswith(".parquet"):
        write_mentions(df, tmp_path / "m.csv")
        write_mentions(df, tmp_path / other)
        first = "m.csv"
    else:
        shutil.copy(FIX / "aminer" / "Bin_Li.xml", tmp_path / "Bin_Li.xml")
        (tmp_path / other).write_text("{}")
        first = "Bin_Li.xml"
    with pytest.raises(MixedFormatsError, match=rf"mixes data formats .*{first}.*{other}|mixes data formats .*{other}"
                                                rf".*{first}") as info:
        load_mentions(tmp_path)
    assert first in str(info.value) and other in str(info.value)
    with pytest.raises(MixedFormatsError):
        load_mentions(tmp_path, strict=False, format="aminer")


def test_folder_of_another_format_than_asked(tmp_path):
    shutil.copy(FIX / "aminer" / "Bin_Li.xml", tmp_path / "Bin_Li.xml")
    with pytest.raises(MixedFormatsError, match=r"format='han' was asked, but this folder holds aminer files "
                                                r"\(Bin_Li\.xml\)"):
        load_mentions(tmp_path, format="han")


def test_crossref_folder_reads_gold_and_ignores_splits(tmp_path):
    for f in (FIX / "crossref").iterdir():
        shutil.copy(f, tmp_path / f.name)
    (tmp_path / "splits.json").write_text('{"splits": {}}')
    df, report = quiet_load(tmp_path, return_report=True)
    assert len(df) == 4
    assert [Path(p).name for p in report.files_read] == ["mentions.jsonl", "gold_clusters.json"]
    assert [(Path(p).name, w) for p, w in report.files_ignored] == [
        ("splits.json", "train/dev/test splits of the Crossref set; not read")]


# ----------------------------------------------------------------------------- encodings
def test_declared_latin1_encoding_is_honoured(tmp_path):
    path = FIX / "aminer_latin1" / "Jose_Garcia.xml"
    assert b"Jos\xe9 Garc\xeda" in path.read_bytes()  # really Latin-1 on disk
    df = quiet_load(path)
    g = df.set_index("mention_id")
    assert g.at["Jose_Garcia/0", "name"] == "José García"
    assert g.at["Jose_Garcia/0", "coauthors"] == ["Jürgen Müller"]  # own name found and removed
    assert g.at["Jose_Garcia/0", "affiliation"] == "Universität Zürich"
    assert g.at["Jose_Garcia/1", "title"] == "Øresund bridges" and g.at["Jose_Garcia/1", "venue"] == "Ingeniería"
    # the same bytes without the declaration are not UTF-8: refused with a hint, never mis-decoded
    raw = path.read_bytes().split(b"\n", 1)[1]
    (tmp_path / "Jose_Garcia.xml").write_bytes(raw)
    with pytest.raises(MentionFormatError, match=r"Jose_Garcia\.xml:2: not valid UTF-8 \(no encoding declared, so "
                                                 r"UTF-8\).*ISO-8859-1"):
        load_mentions(tmp_path / "Jose_Garcia.xml")


def test_utf16_with_bom_and_unknown_encoding(tmp_path):
    text = (FIX / "aminer" / "Bin_Li.xml").read_text(encoding="utf-8")
    (tmp_path / "Bin_Li.xml").write_bytes(text.replace('encoding="utf-8"', 'encoding="utf-16"').encode("utf-16"))
    pd.testing.assert_frame_equal(quiet_load(tmp_path / "Bin_Li.xml"), quiet_load(FIX / "aminer" / "Bin_Li.xml"))
    (tmp_path / "X.xml").write_text('<?xml version="1.0" encoding="klingon-8"?>\n<person/>')
    with pytest.raises(MentionFormatError, match=r"X\.xml:1: the XML declaration names an unknown encoding "
                                                 r"'klingon-8'"):
        load_mentions(tmp_path / "X.xml")


# ----------------------------------------------------------------------------- optional columns
def test_aminer_abstract_and_keywords_in_every_form():
    df = quiet_load(FIX / "aminer_fields")
    g = df.set_index("mention_id")
    assert g.at["Wei_Wang/0", "abstract"] == "We mine frequent subgraphs."
    assert g.at["Wei_Wang/0", "keywords"] == ["graph mining", "frequent patterns"]  # one ';'-separated element
    assert g.at["Wei_Wang/1", "keywords"] == ["network", "embedding", "representation learning"]  # per element, ','
    assert g.at["Wei_Wang/2", "keywords"] == ["protein", "folding"]  # <keywords><keyword/>...</keywords>
    assert g.at["Wei_Wang/2", "title"] == "Protein structure prediction"  # nested markup kept as text
    # missing stays missing: "null", empty or absent -> NA / [], never ""
    assert pd.isna(g.at["Wei_Wang/1", "abstract"]) and pd.isna(g.at["Wei_Wang/2", "abstract"])
    assert pd.isna(g.at["Wei_Wang/3", "abstract"]) and g.at["Wei_Wang/3", "keywords"] == []
    assert g.at["Wei_Wang/1", "venue"] == "" and g.at["Wei_Wang/1", "affiliations"] == []
    assert g.at["Wei_Wang/0", "affiliations"] == ["UIUC"] and g.at["Wei_Wang/0", "paper_id"] == "101"
    assert df["orcid"].isna().all() and (df["references"].map(len) == 0).all()
    assert g.at["Wei_Wang/0", "coauthors"] == ["Jiawei Han"]


def test_s2and_prefixed_files_with_papers():
    df, report = quiet_load(FIX / "s2and_papers", return_report=True)
    assert [Path(p).name for p in report.files_read] == ["tiny_signatures.json", "tiny_clusters.json",
                                                         "tiny_papers.json"]
    g = df.set_index("mention_id")
    assert g.at["10", "affiliations"] == ["MIT", "Broad Institute"] and g.at["10", "affiliation"] == "MIT; Broad Institute"
    assert g.at["11", "affiliations"] == [] and g.at["12", "affiliations"] == []
    assert g.at["10", "abstract"] == "We study gene networks." and pd.isna(g.at["11", "abstract"])
    assert pd.isna(g.at["12", "abstract"])
    assert g.at["10", "references"] == ["2", "7"] and g.at["11", "references"] == []
    assert g.at["10", "coauthors"] == ["Bo Chen"] and g.at["11", "coauthors"] == ["Bo Chen"]
    assert g.at["10", "venue"] == "Cell" and g.at["11", "year"] == 2020 and g.at["10", "paper_id"] == "1"
    assert g.at["10", "gold"] == g.at["11", "gold"] == "c1"


def test_crossref_orcid_is_kept_as_an_identifier_only(tmp_path):
    df = quiet_load(FIX / "crossref")
    g = df.set_index("mention_id")
    assert g.at["m1", "orcid"] == "0000-0001" and pd.isna(g.at["m2", "orcid"])
    labelled = df["gold"].notna()
    assert (df.loc[labelled, "gold"] == df.loc[labelled, "orcid"]).all()  # why features must never read it
    assert "orcid" in IDENTIFIER_COLUMNS
    assert g.at["m1", "paper_id"] == "10.1/a" and g.at["m1", "affiliations"] == ["Univ Houston"]
    assert g.at["m2", "affiliations"] == [] and g.at["m2", "affiliation"] == ""
    # extra Crossref fields when a dump has them
    rec = {"mention_id": "z1", "doi": "10.9/z", "raw_name": "Zoe Ng", "lastname": "Ng", "firstname": "Zoe",
           "abstract": "On things.", "subject": ["Physics", "Optics"], "references": [{"DOI": "10.1/r"}, {"key": "k2"}]}
    (tmp_path / "mentions.jsonl").write_text(json.dumps(rec) + "\n")
    z = quiet_load(tmp_path).iloc[0]
    assert z["abstract"] == "On things." and z["keywords"] == ["Physics", "Optics"]
    assert z["references"] == ["10.1/r", "k2"]


def test_han_has_no_optional_fields():
    df = quiet_load(FIX / "han")
    assert df["abstract"].isna().all() and df["paper_id"].isna().all()
    assert all(v == [] for c in ("keywords", "affiliations", "references") for v in df[c])


# ----------------------------------------------------------------------------- list columns in CSV / Parquet
def lists_frame():
    df = quiet_load(FIX / "aminer_fields")
    df.at[0, "coauthors"] = ['O\'Brien, "Pat"', "Zoë|Li", "[x]"]  # quotes, separators, brackets in names
    df.at[1, "references"] = ["p1", "p2"]
    df.at[3, "affiliations"] = ["Dept. A, Univ; B", "Lab C"]
    return df


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_list_columns_round_trip(tmp_path, ext):
    df = lists_frame()
    back = quiet_load(write_mentions(df, tmp_path / f"m.{ext}"))
    pd.testing.assert_frame_equal(back, df)
    assert back.at[0, "coauthors"] == ['O\'Brien, "Pat"', "Zoë|Li", "[x]"]
    if ext == "csv":
        raw = pd.read_csv(tmp_path / "m.csv", dtype=str, keep_default_na=False)
        assert json.loads(raw.at[1, "keywords"]) == ["network", "embedding", "representation learning"]


def test_plain_to_csv_python_lists_are_read_back(tmp_path):
    df = lists_frame()
    df.to_csv(tmp_path / "plain.csv", index=False)  # lists written as Python reprs "['A', 'B']"
    assert "['Jie Tang']" in (tmp_path / "plain.csv").read_text()
    back = quiet_load(tmp_path / "plain.csv")
    pd.testing.assert_frame_equal(back, df)


def test_nine_column_frame_round_trip_gets_the_optional_columns(tmp_path):
    df = quiet_load(FIX / "aminer")[list(MENTION_COLUMNS)]
    back = quiet_load(write_mentions(df, tmp_path / "m.parquet"))
    pd.testing.assert_frame_equal(back, add_optional_columns(df))
    assert tuple(add_optional_columns(df).columns) == ALL_COLUMNS


def test_unparseable_list_cell_is_refused_with_file_line_and_column(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("mention_id,name,coauthors,keywords\n"
                 "a,Ann Lee,\"['Bo Li', 'Cy Wu']\",[]\n"
                 "b,Bo Li,\"['Ann Lee' 'Cy Wu']\",[]\n"  # the repr of a NumPy array: no commas
                 "c,Cy Wu,[],\"[__import__('os').system('touch PWNED')]\"\n")
    with pytest.warns(SkippedRecordsWarning, match=r"m\.csv:3: column 'coauthors': cannot read .* as a list"):
        df, report = load_mentions(p, return_report=True)
    assert df["mention_id"].tolist() == ["a"] and df.at[0, "coauthors"] == ["Bo Li", "Cy Wu"]
    assert [(r, why.split(":")[0]) for _, r, why in report.skipped] == [(3, "column 'coauthors'"),
                                                                        (4, "column 'keywords'")]
    assert not (tmp_path / "PWNED").exists() and not Path("PWNED").exists()  # nothing was evaluated
    with pytest.raises(MentionFormatError, match=r"m\.csv:3: column 'coauthors'"):
        load_mentions(p, strict=True)


def test_legacy_pipe_separated_csv_still_reads(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("mention_id,name,coauthors,keywords,abstract\n1,Ann Lee,Bo Li|Cy Wu,data;graphs,\n")
    with pytest.warns(InputWarning, match=r"m\.csv:2: column 'keywords': 1 of 1 rows split at ';'"):
        df = quiet_load(p)
    assert df.at[0, "coauthors"] == ["Bo Li", "Cy Wu"] and df.at[0, "keywords"] == ["data", "graphs"]
    assert pd.isna(df.at[0, "abstract"])


def test_write_mentions_refuses_a_bad_list_cell(tmp_path):
    df = quiet_load(FIX / "aminer")
    df.at[2, "keywords"] = 3.5
    with pytest.raises(ValueError, match=r"column 'keywords', row 2: expected a list of strings, got float"):
        write_mentions(df, tmp_path / "m.csv")
    assert not (tmp_path / "m.csv").exists()


def test_parquet_lists_are_native(tmp_path):
    import pyarrow.parquet as pq

    write_mentions(lists_frame(), tmp_path / "m.parquet")
    schema = pq.read_schema(tmp_path / "m.parquet")
    for c in LIST_COLUMNS:
        assert str(schema.field(c).type).startswith("list<"), c


# ----------------------------------------------------------------------------- report
def test_report_keeps_the_attribute_names_the_pipeline_reads():
    _, report = quiet_load(FIX / "aminer", return_report=True)
    assert isinstance(report, LoadReport) and report.format == "aminer"
    assert (report.n_read, report.n_skipped, report.skipped) == (5, 0, ())
    assert report.files == report.files_read and len(report.files) == 2
    assert set(report.repairs) <= set(report.notes) and report.n_repaired == len(report.repairs) > 0
    # Jie_Tang.xml has stray '&' (one repair); Bin_Li.xml needs none
    assert [(Path(p).name, why) for p, _, why in report.repairs] == [("Jie_Tang.xml", "escaped 2 stray '&'")]
    assert report.summary().splitlines()[0] == ("read 5 mentions from 2 file(s); skipped 0 record(s); "
                                                "1 repair(s) in 1 file(s)")
    d = report.to_dict()
    assert json.loads(json.dumps(d))["n_repaired"] == 1 and d["format"] == "aminer"


def test_add_optional_columns_normalises_and_validates():
    df = quiet_load(FIX / "aminer")[list(MENTION_COLUMNS)].assign(abstract=["", " x ", None, "y", ""],
                                                                  keywords=[np.array(["a", "b"]), None, [], "p|q",
                                                                            float("nan")])
    out = add_optional_columns(df)
    assert out["abstract"].isna().tolist() == [True, False, True, False, True] and out.at[1, "abstract"] == "x"
    assert out["keywords"].tolist() == [["a", "b"], [], [], ["p", "q"], []]
    with pytest.raises(ValueError, match="lacks the required column"):
        add_optional_columns(df.drop(columns="gold"))
    with pytest.raises(ValueError, match=r"column 'keywords', row 0: a nested list"):
        add_optional_columns(df.assign(keywords=[[["a"]], [], [], [], []]))


@pytest.mark.parametrize("ext", ["csv", "parquet"])
def test_lists_of_equal_length_stay_lists(tmp_path, ext):
    # numpy would happily turn equal-length lists into a 2-D array; each cell must stay a list
    df = quiet_load(FIX / "aminer")
    df["coauthors"] = [["A B", "C D"] for _ in range(len(df))]
    df["keywords"] = [["k"] for _ in range(len(df))]
    back = quiet_load(write_mentions(df, tmp_path / f"m.{ext}"))
    assert back["coauthors"].map(type).eq(list).all() and back.at[4, "coauthors"] == ["A B", "C D"]
    pd.testing.assert_frame_equal(back, df)


def test_stray_less_than_in_an_abstract_is_escaped(tmp_path):
    text = (FIX / "aminer_fields" / "Wei_Wang.xml").read_text()
    line = text.count("\n", 0, text.index("<abstract>We mine")) + 1
    (tmp_path / "Wei_Wang.xml").write_text(text.replace("We mine", "With p < 0.05 and n<=10 we mine"))
    df, report = quiet_load(tmp_path, return_report=True)
    assert df.at[0, "abstract"] == "With p < 0.05 and n<=10 we mine frequent subgraphs."
    assert [(r, why) for _, r, why in report.repairs] == [(line, "escaped 2 stray '<'")]
    # a '<' that looks like a tag is not guessed at: the file is skipped and named
    (tmp_path / "Wei_Wang.xml").write_text(text.replace("We mine", "if a<b we mine"))
    with pytest.raises(MentionFormatError, match=r"Wei_Wang\.xml:\d+: malformed XML"):
        load_mentions(tmp_path)
