"""experiments/markdown.py: a generated block written between its markers, and the one command line every
generated table (iwa_table, seed002_table) shares."""

from pathlib import Path

import pytest

from experiments.markdown import table_main, write_block

BLOCK = ["<!-- t begin -->", "", "| a |", "|---|", "| 1 |", "", "<!-- t end -->"]


def test_write_block_replaces_only_between_the_markers(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text("# Title\n\nbefore\n<!-- t begin -->\nold table\n<!-- t end -->\nafter\n")
    write_block(doc, BLOCK)
    assert doc.read_text() == "# Title\n\nbefore\n" + "\n".join(BLOCK) + "\nafter\n"
    write_block(doc, BLOCK)   # again: the same text, nothing doubled
    assert doc.read_text().count("<!-- t begin -->") == 1


def test_write_block_refuses_a_document_without_the_markers(tmp_path: Path):
    doc = tmp_path / "doc.md"
    doc.write_text("# a document someone wrote\n")
    with pytest.raises(ValueError, match="put them where the table goes"):
        write_block(doc, BLOCK)
    assert doc.read_text() == "# a document someone wrote\n"


def _main(argv, calls):
    def block(run_dirs, jb_ms):
        calls.append((list(run_dirs), jb_ms))
        if any(not Path(d).is_dir() for d in run_dirs):
            raise ValueError(f"{run_dirs[0]}: no such directory")
        return BLOCK
    return table_main(argv, prog="t", description="a table", table_block=block, jitter_buffer_ms=40.0)


def test_table_main_passes_its_options_and_prints_without_markers(tmp_path: Path, capsys):
    calls: list = []
    assert _main([str(tmp_path)], calls) == 0
    assert calls == [([tmp_path], 40.0)]
    out = capsys.readouterr().out
    assert "| 1 |" in out and "<!--" not in out
    assert _main([str(tmp_path), str(tmp_path), "--jitter-buffer", "80"], calls) == 0
    assert calls[-1] == ([tmp_path, tmp_path], 80.0)


def test_table_main_writes_into_out_and_errors_are_one_line(tmp_path: Path, capsys):
    doc = tmp_path / "doc.md"
    doc.write_text("x\n<!-- t begin -->\n<!-- t end -->\ny\n")
    assert _main([str(tmp_path), "--out", str(doc)], []) == 0
    assert "| 1 |" in doc.read_text()
    capsys.readouterr()
    assert _main([str(tmp_path / "missing")], []) == 1
    err = capsys.readouterr().err
    assert err.startswith("error: ") and err.count("\n") == 1
    plain = tmp_path / "plain.md"
    plain.write_text("no markers\n")
    assert _main([str(tmp_path), "--out", str(plain)], []) == 1
    assert plain.read_text() == "no markers\n"
