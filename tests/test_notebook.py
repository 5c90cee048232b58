"""Jupyter notebooks are linted like modules made of their code cells, reported by cell and line, and fixed
in place without touching outputs, metadata or any other cell (perflint/notebook.py)."""

from __future__ import annotations

import json

import pytest

import perflint.rule as rule_module
from perflint.cli import main
from perflint.rule import all_rules
from tests.conftest import SYNC_LOOP
from tests.test_fix import ToCuda

SYNC = SYNC_LOOP.replace("import torch\n\n", "").rstrip("\n")  # PFL101 at line 5, column 18
# tests/test_fix.py's ToCuda (PFL990), so that these tests do not move with the real rules: reported at
# line 2, column 11 (`cuda`); its safe fix rewrites the call from column 9: `m = x.to("cuda")`.
TRANSFER = "for i in range(3):\n    m = x.cuda()"


@pytest.fixture
def project(project, monkeypatch):
    monkeypatch.setattr(rule_module, "_registry", {**all_rules(), "PFL990": ToCuda})
    return project


def code(source: str, outputs: list | None = None) -> dict:
    return {"cell_type": "code", "execution_count": 1, "id": "c", "metadata": {"tags": ["keep"]},
            "outputs": outputs or [], "source": source.splitlines(keepends=True)}


def markdown(text: str) -> dict:
    return {"cell_type": "markdown", "id": "m", "metadata": {}, "source": [text]}


def write(path, cells, language="python"):
    nb = {"cells": cells, "nbformat": 4, "nbformat_minor": 5,
          "metadata": {"kernelspec": {"display_name": "k", "language": language, "name": "k"},
                       "language_info": {"name": language}}}
    path.write_text(json.dumps(nb, indent=1, sort_keys=True, ensure_ascii=False) + "\n")  # as Jupyter writes it
    return path


def run(capsys, *argv):
    code_ = main(["--no-cache", "--select", "PFL001,PFL101,PFL990", *argv])
    out, err = capsys.readouterr()
    return code_, out, err


def test_findings_are_reported_by_cell_and_line(project, capsys):
    write(project / "nb.ipynb", [markdown("# Title"), code("import torch"), code(SYNC), markdown("more"),
                                 code(TRANSFER)])
    status, out, _ = run(capsys, "nb.ipynb")
    assert status == 1
    assert out.splitlines()[:2] == [
        "nb.ipynb:cell 3:5:18: PFL101 " + out.split("PFL101 ")[1].splitlines()[0],
        "nb.ipynb:cell 5:2:11: PFL990 [*] test rule: .cuda()"]
    assert "Found 2 findings in 1 file." in out


def test_json_fills_the_cell_field_and_counts_rows_in_the_cell(project, capsys):
    write(project / "nb.ipynb", [markdown("# Title"), code("import torch"), code(TRANSFER)])
    _, out, _ = run(capsys, "--output-format", "json", "nb.ipynb")
    (item,) = json.loads(out)
    assert item["cell"] == 3 and item["location"] == {"row": 2, "column": 11}
    assert item["fix"]["edits"][0]["location"] == {"row": 2, "column": 9}


def test_a_folder_of_notebooks_is_linted(project, capsys):
    (project / "notebooks").mkdir()
    for i in range(3):
        write(project / "notebooks" / f"n{i}.ipynb", [code("import torch\n" + TRANSFER)])
    write(project / "notebooks" / ".ipynb_checkpoints_copy.ipynb", [code("import torch\n" + TRANSFER)])
    status, out, _ = run(capsys)
    assert status == 1 and out.count("PFL990") == 4 and "Found 4 findings in 4 files." in out


def test_magics_and_shell_lines_are_not_python_and_do_not_hide_findings(project, capsys):
    write(project / "nb.ipynb", [
        code("%matplotlib inline\nimport torch\n!pip install foo\nfiles = !ls\ntorch.zeros?"),
        code("%%bash\necho ((( not python"),  # a cell magic: the whole cell is another language
        code("%%time\n" + TRANSFER),  # %%time runs the Python below it
        code("for i in range(3):\n    %time f(i)\n    m = x.cuda()"),
    ])
    status, out, _ = run(capsys, "nb.ipynb")
    assert [line.split(": PFL")[0] for line in out.splitlines() if "PFL" in line] == [
        "nb.ipynb:cell 3:3:11", "nb.ipynb:cell 4:3:11"]


def test_a_cell_that_does_not_compile_is_pfl001_and_the_others_are_linted(project, capsys):
    write(project / "nb.ipynb", [code("import torch"), code("def broken(:\n    pass"), code(TRANSFER)])
    status, out, _ = run(capsys, "nb.ipynb")
    assert "nb.ipynb:cell 2:1:1: PFL001 cannot parse" in out and "nb.ipynb:cell 3:2:11: PFL990" in out


def test_notebooks_in_other_languages_are_not_linted(project, capsys):
    write(project / "r.ipynb", [code("x <- c(1, 2)\nfor (i in x) print(i)")], language="R")
    assert run(capsys, "r.ipynb")[0] == 0


def test_fix_changes_only_the_fixed_lines_and_keeps_outputs_and_metadata(project, capsys):
    output = [{"name": "stdout", "output_type": "stream", "text": ["ok\n"]}]
    cells = [markdown("# Title"), code("%matplotlib inline\nimport torch", output), code(TRANSFER, output),
             code("%%bash\necho hi"), code("for i in range(3):\n    %time f(i)\n    m = x.cuda()")]
    path = write(project / "nb.ipynb", cells)
    before = path.read_text()
    status, out, err = run(capsys, "--fix", "nb.ipynb")
    after = path.read_text()
    assert "Fixed 2 findings." in err and status == 0
    changed = [(a, b) for a, b in zip(before.splitlines(), after.splitlines()) if a != b]
    assert changed == [('    "    m = x.cuda()"', '    "    m = x.to(\\"cuda\\")"')] * 2
    assert len(before.splitlines()) == len(after.splitlines())
    old, new = json.loads(before), json.loads(after)
    for a, b in zip(old["cells"], new["cells"]):
        assert {k: v for k, v in a.items() if k != "source"} == {k: v for k, v in b.items() if k != "source"}
    assert new["cells"][1]["source"] == old["cells"][1]["source"] and new["metadata"] == old["metadata"]
    assert run(capsys, "--fix", "nb.ipynb")[2].startswith("Fixed 0 findings.") and path.read_text() == after


def test_diff_shows_one_patch_per_changed_cell(project, capsys):
    write(project / "nb.ipynb", [code("import torch"), code(TRANSFER)])
    status, out, err = run(capsys, "--diff", "nb.ipynb")
    assert status == 1 and out.startswith("--- a/nb.ipynb:cell 2\n+++ b/nb.ipynb:cell 2\n")
    assert '+    m = x.to("cuda")' in out and "Would fix 1 finding." in err


def test_the_cache_keeps_the_cell(project, capsys):
    write(project / "nb.ipynb", [markdown("x"), code("import torch\n" + TRANSFER)])
    first = main(["--select", "PFL990", "nb.ipynb"]), capsys.readouterr()
    assert main(["--select", "PFL990", "nb.ipynb"]) == first[0] and capsys.readouterr() == first[1] and "cell 2:3:11" in first[1].out


@pytest.mark.parametrize("fmt,expected", [("github", "::cell 2: "), ("gitlab", '"description": "PFL990 cell 2: '),
                                          ("sarif", '"text": "cell 2: ')])
def test_formats_without_a_cell_field_name_the_cell_in_the_message(project, capsys, fmt, expected):
    write(project / "nb.ipynb", [markdown("x"), code("import torch\n" + TRANSFER)])
    _, out, _ = run(capsys, "--output-format", fmt, "nb.ipynb")
    assert expected in out
