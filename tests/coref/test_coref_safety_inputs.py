"""Inputs a user cannot get silently wrong (issue 28, items 4-7): list separators, column names, long
fields, files that are not UTF-8. Each test failed on the main branch before the change."""
import warnings

import pandas as pd
import pytest

import coref.cli
from coref.evaluate import b3
from coref.exceptions import InputWarning, MentionFormatError, SkippedFilesWarning
from coref.io import load_mentions, write_mentions
from coref.schema import schema_column_like
from sampling.utils.data import data_path

COLS = ["mention_id", "block", "name", "coauthors", "title", "venue", "year", "affiliation", "gold"]


@pytest.fixture(scope="module")
def fifty():
    """50 mentions of two shipped names (each with 2+ coauthors), as loaded: the reference frame."""
    df = load_mentions(data_path("aminer_na"))
    many = df[df["coauthors"].map(len) >= 2]
    sel = pd.concat([many[many["block"] == b].head(25) for b in ("Jie_Tang", "Bin_Yu")])
    assert len(sel) == 50
    return sel[COLS].reset_index(drop=True)


def written(df, path, sep=None, **rename):
    """``df`` as a user writes it with pandas: coauthors joined with ``sep`` (None: JSON arrays)."""
    if sep is None:
        return write_mentions(df, path)
    out = df.copy()
    out["coauthors"] = out["coauthors"].map(sep.join)
    out.rename(columns=rename).to_csv(path, index=False)
    return path


def load_quietly(path, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", InputWarning)
        return load_mentions(path, **kw)


# ----------------------------------------------------------------------------- item 4: list separators
def test_semicolon_coauthors_split_and_warned_with_the_row_count(fifty, tmp_path):
    p = written(fifty, tmp_path / "semi.csv", "; ")
    with pytest.warns(InputWarning, match=r"semi\.csv:2: column 'coauthors': 50 of 50 rows split at ';' \(e\.g\. "):
        df, report = load_mentions(p, return_report=True)
    assert df["coauthors"].tolist() == fifty["coauthors"].tolist()
    assert len(report.warnings) == 1 and "50 of 50 rows" in report.warning_lines()[0]
    assert "\n" not in report.warning_lines()[0]


def test_semicolon_coauthors_do_not_change_b3(fifty, tmp_path):
    """The issue's probe: the same 50 mentions, coauthors written "A; B" or as JSON arrays, same B3 F1."""
    scores = {}
    for sep in (None, "; "):
        p = written(fifty, tmp_path / f"in{len(sep or '')}.csv", sep)
        out = tmp_path / f"out{len(sep or '')}"
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", InputWarning)
            assert coref.cli.main(["predict", "--data", str(p), "--out", str(out), "--quiet"]) == 0
        clusters = pd.read_csv(out / "clusters.csv", dtype=str)
        scores[sep] = b3(clusters.set_index("mention_id")["cluster_id"], fifty.set_index("mention_id")["gold"]).f1
    assert scores["; "] == scores[None] > 0.9          # read as "one coauthor 'A; B'" it fell to 0.506


def test_comma_separated_names_are_refused_with_count_and_line(fifty, tmp_path):
    p = written(fifty, tmp_path / "comma.csv", ", ")
    with pytest.raises(MentionFormatError, match=r"comma\.csv:2: column 'coauthors': 50 of 50 rows look like lists "
                                                 r"that cannot be split safely \(e\.g\. '.*': ',' is also inside "
                                                 r"names.*JSON array"):
        load_mentions(p)


def test_one_name_written_last_comma_first_is_one_coauthor(tmp_path):
    p = tmp_path / "m.csv"
    pd.DataFrame({"mention_id": ["1", "2"], "name": ["Ann Lee", "Ann Lee"], "coauthors": ["Smith, John", "Li, B."],
                  "block": "a lee", "title": "t", "venue": "v", "year": 2000,
                  "affiliation": "x"}).to_csv(p, index=False)
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)      # nothing to warn about: one name per cell
        df = load_mentions(p)
    assert df["coauthors"].tolist() == [["Smith, John"], ["Li, B."]]


def test_pipe_and_semicolon_mixed_is_refused(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text("mention_id,name,coauthors\n1,Ann Lee,Bo Li|Cy Wu\n2,Ann Lee,Bo Li|Cy Wu; Di Xu\n")
    with pytest.raises(MentionFormatError, match=r"m\.csv:3: column 'coauthors': 1 of 2 rows .*'\|' and ';' both"):
        load_quietly(p)


def test_comma_keywords_split_and_warned_affiliations_kept(tmp_path):
    p = tmp_path / "m.csv"
    p.write_text('mention_id,name,keywords,affiliations\n1,Ann Lee,"graphs, data",\n'
                 '2,Ann Lee,,"Dept. of CS, MIT"\n')
    with pytest.warns(InputWarning, match=r"m\.csv:2: column 'keywords': 1 of 2 rows split at ','"):
        df = load_mentions(p)
    assert df["keywords"].tolist() == [["graphs", "data"], []]
    assert df["affiliations"].tolist() == [[], ["Dept. of CS, MIT"]]


# ----------------------------------------------------------------------------- item 5: column names
@pytest.mark.parametrize("bad", ["co_authors", "Coauthors", "co-authors", "Co Authors"])
def test_a_lookalike_column_is_an_error_naming_both(fifty, tmp_path, bad):
    p = written(fifty, tmp_path / "x.csv", "|", coauthors=bad)
    with pytest.raises(MentionFormatError, match=rf"x\.csv:1: column '{bad}' looks like the schema column "
                                                 r"'coauthors': rename it"):
        load_mentions(p)


def test_lookalike_rules():
    assert schema_column_like("co_authors") == "coauthors" and schema_column_like("Mention ID") == "mention_id"
    assert schema_column_like("yeer") == "year" and schema_column_like("Affiliations") == "affiliations"
    assert schema_column_like("date") is None and schema_column_like("coauthors") is None
    assert schema_column_like("email") is None and schema_column_like("label") is None


def test_missing_evidence_column_warns_once_per_file_and_block_is_said_once(fifty, tmp_path):
    folder = tmp_path / "two"
    folder.mkdir()
    for k in range(2):
        written(fifty.iloc[25 * k: 25 * (k + 1)].drop(columns=["title", "block"]), folder / f"p{k}.csv", "|")
    with pytest.warns(InputWarning) as rec:
        df, report = load_mentions(folder, return_report=True)
    lines = [str(w.message) for w in rec if issubclass(w.category, InputWarning)]
    assert sum("no column 'title': unknown for all 25 rows" in ln for ln in lines) == 2
    block = [ln for ln in lines if "no column 'block'" in ln]
    assert len(block) == 1 and "the same in 2 files" in block[0]
    assert all("\n" not in ln and "None" not in ln for ln in lines)
    assert df["block"].iloc[0] == "j tang" and (df["title"] == "").all()


def test_missing_required_column_is_an_error_naming_the_file(tmp_path):
    p = tmp_path / "x.csv"
    p.write_text("mention_id,title\n1,t\n")
    with pytest.raises(MentionFormatError, match=r"x\.csv:1: missing required column\(s\) \['name'\]"):
        load_mentions(p)


def test_gold_and_optional_columns_absent_are_notes_not_warnings(fifty, tmp_path):
    p = written(fifty.drop(columns=["gold"]), tmp_path / "x.csv", "|")
    with warnings.catch_warnings():
        warnings.simplefilter("error", InputWarning)
        _, report = load_mentions(p, return_report=True)
    assert any("optional column(s)" in why and "'gold'" in why for _, _, why in report.notes)
    assert all(r is not None for _, r, _ in report.notes)          # never "None" where a line belongs


# ----------------------------------------------------------------------------- item 6: long fields
def test_a_200kb_abstract_loads_as_from_parquet(fifty, tmp_path):
    df = fifty.assign(abstract=["word " * 40_000] + [None] * 49)       # 200,000 characters
    write_mentions(df, tmp_path / "m.csv")
    write_mentions(df, tmp_path / "m.parquet")
    from_csv, from_pq = load_mentions(tmp_path / "m.csv"), load_mentions(tmp_path / "m.parquet")
    assert len(from_csv["abstract"].iloc[0]) == len(("word " * 40_000).strip())
    pd.testing.assert_frame_equal(from_csv, from_pq)
    import csv
    assert csv.field_size_limit() == 131072                             # the process-wide limit is restored


# ----------------------------------------------------------------------------- item 7: not UTF-8
def test_a_latin1_csv_in_a_folder_is_skipped_named_with_its_line(fifty, tmp_path):
    folder = tmp_path / "f"
    folder.mkdir()
    write_mentions(fifty.iloc[:25], folder / "a.csv")
    bad = fifty.iloc[25:].assign(name="Bín Yú")
    bad.assign(coauthors=bad["coauthors"].map("|".join)).to_csv(folder / "b.csv", index=False, encoding="latin-1")
    with pytest.warns(SkippedFilesWarning, match=r"b\.csv:2: not valid UTF-8 \(byte \d+: invalid"):
        df, report = load_mentions(folder, return_report=True)
    assert len(df) == 25 and report.n_files_skipped == 1
    (path, line, why), = report.files_skipped
    assert path.endswith("b.csv") and line == 2 and "save the file as UTF-8" in why
    assert "None" not in report.summary()


def test_repairs_are_a_count_and_a_file_list(tmp_path):
    folder = tmp_path / "x"
    folder.mkdir()
    src = sorted(data_path("aminer_na").glob("*.xml"))[:2]
    for f in src:
        text = f.read_text(encoding="utf-8")
        (folder / f.name).write_text(text.replace("</title>", " R&D</title>"), encoding="utf-8")
    _, report = load_quietly(folder, return_report=True)
    n = len(report.repairs)
    assert n >= 2 and len(report.repaired_files) == 2
    head, listed = report.summary().splitlines()[:2]
    assert f"{n} repair(s) in 2 file(s)" in head and listed.startswith("repaired files: ")
    assert "&" not in report.summary()                                   # the details are for a log file
    assert len(report.repair_details().splitlines()) == n and "stray '&'" in report.repair_details()
    assert report.to_dict()["repaired_files"] == list(report.repaired_files)


def test_no_none_where_a_line_belongs_in_the_shipped_data_report():
    _, report = load_quietly(data_path("aminer_na"), return_report=True)
    assert report.notes and all(r is not None for _, r, _ in report.notes + report.repairs)
    assert ":None" not in report.summary() and "None:" not in report.summary()
