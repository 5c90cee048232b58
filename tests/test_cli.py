"""The `perflint` command: options, configuration, formats, exit codes and suppressions."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest

from perflint.cli import main
from tests.conftest import SYNC_LOOP


def run(capsys, *argv):
    code = main(list(argv))
    out, err = capsys.readouterr()
    return code, out, err


def write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)
    return path


def test_findings_exit_1_sorted_text(project, capsys):
    write(project / "b.py", SYNC_LOOP)
    write(project / "a.py", SYNC_LOOP + "\nfor t in loader:\n    v = model(t.cuda(non_blocking=True)).item()\n")
    code, out, _ = run(capsys, "--no-cache")
    assert code == 1
    lines = [l for l in out.splitlines() if ": PFL" in l]
    assert lines == ["a.py:7:18: PFL101 " + lines[0].split("PFL101 ")[1], lines[1], lines[2]]
    assert lines[1].startswith("a.py:11:9: PFL101") and lines[2].startswith("b.py:7:18: PFL101")
    assert "Found 3 findings in 2 files." in out


def test_clean_tree_exit_0(project, capsys):
    write(project / "ok.py", "import torch\nx = torch.zeros(3)\nprint(x.sum().item())\n")
    code, out, _ = run(capsys, "--no-cache")
    assert code == 0 and "All clear: 1 file checked." in out


def test_exit_zero_and_quiet(project, capsys):
    write(project / "a.py", SYNC_LOOP)
    code, out, _ = run(capsys, "--exit-zero", "-q", "--no-cache")
    assert code == 0 and out.count("PFL101") == 1 and "Found" not in out


@pytest.mark.parametrize("argv,message", [
    (["--bogus"], "unrecognized arguments: --bogus"),
    (["--select", "PFL999"], "unknown rule code or prefix 'PFL999'"),
    (["--output-format", "xml"], "invalid choice: 'xml'"),
    (["--explain", "PFL000"], "unknown rule code"),
    (["missing_dir"], "missing_dir: no such file or directory"),
    (["--jobs", "-1"], "--jobs must be >= 0"),
])
def test_usage_errors_exit_2_with_one_line(project, capsys, argv, message):
    try:
        code = main(argv)
    except SystemExit as e:
        code = e.code
    _, err = capsys.readouterr()
    assert code == 2
    assert message in err and len(err.strip().splitlines()) == 1 and "Traceback" not in err


def test_select_ignore_extend_select_prefixes(project, capsys):
    write(project / "a.py", SYNC_LOOP + "\nimport time\nfor t in loader:\n    torch.cuda.synchronize()\n")
    _, out, _ = run(capsys, "--no-cache", "-q")
    assert "PFL101" in out and "PFL109" not in out  # off by default
    _, out, _ = run(capsys, "--no-cache", "-q", "--extend-select", "PFL109")
    assert "PFL101" in out and "PFL109" in out
    _, out, _ = run(capsys, "--no-cache", "-q", "--select", "PFL109")
    assert "PFL101" not in out and "PFL109" in out
    _, out, _ = run(capsys, "--no-cache", "-q", "--ignore", "PFL1")
    assert "PFL1" not in out
    _, out, _ = run(capsys, "--no-cache", "-q", "--select", "PFL109", "--extend-select", "PFL101")
    assert "PFL101" in out and "PFL109" in out


def test_statistics_table(project, capsys):
    write(project / "a.py", SYNC_LOOP + "\nfor t in loader:\n    v = model(t.cuda(non_blocking=True)).item()\n")
    code, out, _ = run(capsys, "--no-cache", "--statistics")
    assert code == 1
    row = next(l for l in out.splitlines() if l.startswith("PFL101"))
    assert row.split() == ["PFL101", "item-in-loop", "2"]


def test_list_rules_and_explain(capsys):
    code, out, _ = run(capsys, "--list-rules")
    assert code == 0 and "PFL101" in out and "item-in-loop" in out and "PFL001" in out
    code, out, _ = run(capsys, "--explain", "pfl101")
    assert code == 0 and out.startswith("# PFL101 item-in-loop") and "## Why it is slow" in out


def test_version(capsys):
    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0 and capsys.readouterr().out.startswith("perflint ")


def test_python_dash_m_and_console_script(project):
    write(project / "a.py", SYNC_LOOP)
    r = subprocess.run([sys.executable, "-m", "perflint", "--no-cache", "a.py"], capture_output=True, text=True)
    assert r.returncode == 1 and "a.py:7:18: PFL101" in r.stdout


def test_json_output_follows_ruff_schema(project, capsys):
    write(project / "a.py", SYNC_LOOP)
    code, out, _ = run(capsys, "--no-cache", "--output-format", "json")
    data = json.loads(out)
    assert code == 1 and len(data) == 1
    item = data[0]
    assert set(item) >= {"code", "message", "filename", "location", "end_location", "fix", "url", "noqa_row",
                         "name", "severity"}
    assert item["code"] == "PFL101" and item["location"] == {"row": 7, "column": 18}
    assert item["end_location"] == {"row": 7, "column": 29} and item["noqa_row"] == 7
    assert os.path.isabs(item["filename"]) and item["filename"].endswith("a.py")
    assert item["url"].endswith("rules/PFL101-item-in-loop/README.md")


def test_every_format_says_why(project, capsys):
    """The evidence: JSON and SARIF carry the whole chain; text, GitHub and GitLab one short clause of it
    (what the value is, and why this runs every step)."""
    write(project / "a.py", SYNC_LOOP)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "json")
    evidence = json.loads(out)[0]["evidence"]
    assert evidence[0] == "`loss` is on the device"
    assert "runs every step: loop over `loader` (line 5)" in evidence
    clause = "[`loss` is on the device; runs every step: loop over `loader` (line 5)]"
    _, out, _ = run(capsys, "--no-cache")
    assert out.splitlines()[0].endswith(clause)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "github")
    assert out.strip().endswith(clause)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "sarif")
    assert json.loads(out)["runs"][0]["results"][0]["properties"]["evidence"] == evidence
    _, out, _ = run(capsys, "--no-cache", "--output-format", "gitlab")
    assert json.loads(out)[0]["description"].endswith(clause)


def test_github_annotations(project, capsys):
    write(project / "a,b.py", SYNC_LOOP)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "github")
    assert out.strip() == ("::warning file=a%2Cb.py,line=7,col=18,endLine=7,endColumn=29,"
                           "title=PFL101 (item-in-loop)::" + out.split("::")[-1].strip())
    assert "%0A" not in out


def test_sarif_has_what_github_code_scanning_requires(project, capsys):
    write(project / "src" / "a.py", SYNC_LOOP)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "sarif", "src")
    sarif = json.loads(out)
    assert sarif["version"] == "2.1.0" and sarif["$schema"].endswith("sarif-2.1.0.json")
    run_ = sarif["runs"][0]
    driver = run_["tool"]["driver"]
    assert driver["name"] == "perflint" and driver["version"]
    ids = [r["id"] for r in driver["rules"]]
    assert "PFL101" in ids and len(ids) == len(set(ids))
    for rule in driver["rules"]:
        assert rule["shortDescription"]["text"] and rule["fullDescription"]["text"]
        assert rule["helpUri"].startswith("https://") and rule["defaultConfiguration"]["level"] in (
            "error", "warning", "note")
    result = run_["results"][0]
    assert result["ruleId"] == "PFL101" and driver["rules"][result["ruleIndex"]]["id"] == "PFL101"
    assert result["message"]["text"]
    loc = result["locations"][0]["physicalLocation"]
    assert loc["artifactLocation"]["uri"] == "src/a.py"
    assert loc["region"]["startLine"] == 7 and loc["region"]["startColumn"] == 18


def test_gitlab_code_quality(project, capsys):
    write(project / "a.py", SYNC_LOOP)
    _, out, _ = run(capsys, "--no-cache", "--output-format", "gitlab")
    issue = json.loads(out)[0]
    assert issue["check_name"] == "PFL101" and issue["location"] == {"path": "a.py", "lines": {"begin": 7, "end": 7}}
    assert len(issue["fingerprint"]) == 64 and issue["severity"] == "minor"


def test_output_file(project, capsys):
    write(project / "a.py", SYNC_LOOP)
    code, out, err = run(capsys, "--no-cache", "--output-format", "json", "-o", "report.json")
    assert code == 1 and out == "" and json.loads((project / "report.json").read_text())[0]["code"] == "PFL101"


def test_noqa_comments(project, capsys):
    src = SYNC_LOOP.replace("total += loss.item()", "total += loss.item()  # noqa: PFL101")
    write(project / "a.py", src + "for t in loader:\n    model(t.cuda(non_blocking=True)).item()  # noqa\nfor t in loader:\n    model(t.cuda(non_blocking=True)).item()  # noqa: PFL999\n")
    _, out, _ = run(capsys, "--no-cache", "-q")
    assert [l.split(":")[1] for l in out.splitlines()] == ["12"]


def test_file_level_noqa(project, capsys):
    write(project / "a.py", "# perflint: noqa\n" + SYNC_LOOP)
    assert run(capsys, "--no-cache")[0] == 0


def test_config_from_pyproject(project, capsys):
    write(project / "pyproject.toml", '[tool.perflint]\nignore = ["PFL109"]\nextend-select = ["PFL1"]\n'
          'per-file-ignores = {"tests/*" = ["PFL101"]}\nextend-exclude = ["generated"]\n')
    loop = SYNC_LOOP + "\nfor t in loader:\n    torch.cuda.synchronize()\n"
    write(project / "a.py", loop)
    write(project / "tests" / "t.py", loop)
    write(project / "generated" / "g.py", loop)
    write(project / ".hidden" / "h.py", loop)
    write(project / "venv" / "v.py", loop)
    _, out, _ = run(capsys, "--no-cache", "-q")
    assert out.splitlines() == [l for l in out.splitlines() if l.startswith("a.py")]
    assert "a.py:7:18: PFL101" in out and "PFL109" not in out


def test_the_code_snapshots_in_a_training_run_s_output_folders_are_not_linted(project, capsys):
    """PointNet++ saves a copy of its model files in log/ at every run: no program imports those copies."""
    write(project / "train.py", SYNC_LOOP)
    for folder in ("log/cls_msg", "logs", "runs/exp1", "outputs/2024-01-01", "lightning_logs/version_0", "mlruns"):
        write(project / folder / "model.py", SYNC_LOOP)
    _, out, _ = run(capsys, "--no-cache", "-q")
    assert {line.split(":")[0] for line in out.splitlines()} == {"train.py"}
    _, out, _ = run(capsys, "--no-cache", "-q", "log/cls_msg/model.py")  # named explicitly: linted
    assert out.startswith("log/cls_msg/model.py:")


def test_config_select_and_exclude(project, capsys):
    write(project / "pyproject.toml", '[tool.perflint]\nselect = ["PFL109"]\nexclude = ["skip_me.py"]\n')
    write(project / "a.py", SYNC_LOOP + "\nfor t in loader:\n    torch.cuda.synchronize()\n")
    write(project / "skip_me.py", SYNC_LOOP + "\nfor t in loader:\n    torch.cuda.synchronize()\n")
    _, out, _ = run(capsys, "--no-cache", "-q")
    assert out.splitlines() == ["a.py:11:5: PFL109 " + out.split("PFL109 ")[1].splitlines()[0]]
    _, out, _ = run(capsys, "--no-cache", "-q", "skip_me.py")  # named explicitly: linted
    assert "skip_me.py" in out


@pytest.mark.parametrize("content,message", [
    ('[tool.perflint]\nselct = ["PFL1"]\n', "unknown key 'selct'"),
    ('[tool.perflint\n', "invalid TOML"),
    ('[tool.perflint]\nselect = "PFL999"\n', "unknown rule code or prefix 'PFL999'"),
    ('[tool.perflint]\nignore = [1]\n', "ignore must be a list of strings"),
    ('[tool.perflint]\nper-file-ignores = {"a.py" = ["XYZ1"]}\n', "unknown rule code or prefix 'XYZ1'"),
])
def test_bad_config_exit_2(project, capsys, content, message):
    write(project / "pyproject.toml", content)
    write(project / "a.py", SYNC_LOOP)
    code, _, err = run(capsys, "--no-cache")
    assert code == 2 and message in err and len(err.strip().splitlines()) == 1


def test_explicit_config_file(project, capsys):
    write(project / "perflint.toml", 'select = ["PFL109"]\n')
    write(project / "a.py", SYNC_LOOP)
    code, _, _ = run(capsys, "--no-cache", "--config", "perflint.toml")
    assert code == 0
    code, _, err = run(capsys, "--config", "nope.toml")
    assert code == 2 and "nope.toml: no such file" in err


def test_cache_reuses_results_and_ignores_corruption(project, capsys):
    write(project / "a.py", SYNC_LOOP)
    first = run(capsys)
    cache_dir = project / ".perflint_cache"
    assert (cache_dir / ".gitignore").read_text().strip().endswith("*")
    (cache_file,) = cache_dir.glob("findings-*.json")
    entries = json.loads(cache_file.read_text())
    assert len(entries) == 1
    assert run(capsys) == first
    cache_file.write_text("{not json")
    assert run(capsys) == first


def test_cache_is_used_not_relinted(project, capsys, monkeypatch):
    write(project / "a.py", SYNC_LOOP)
    run(capsys)
    import perflint.runner as runner

    monkeypatch.setattr(runner, "_lint_one", lambda item: pytest.fail("a cached file was linted again"))
    assert run(capsys)[0] == 1


def test_an_edited_linter_does_not_answer_from_the_cache(project, capsys, monkeypatch):
    """An editable install keeps its version number while its rules change: the cache must not outlive them."""
    import perflint.cache as cache

    write(project / "a.py", SYNC_LOOP)
    run(capsys)
    (before,) = (project / ".perflint_cache").glob("findings-*.json")
    monkeypatch.setattr(cache, "_linter_stamp", lambda: [("rules/edited.py", 1, 2)])
    assert run(capsys)[0] == 1
    after = set((project / ".perflint_cache").glob("findings-*.json")) - {before}
    assert len(after) == 1 and len(json.loads(after.pop().read_text())) == 1  # linted again, cached anew


def test_jobs_give_identical_output(project, capsys):
    for i in range(12):
        write(project / f"m{i:02}.py", SYNC_LOOP if i % 2 else "x = 1\n")
    one = run(capsys, "--no-cache", "--jobs", "1")
    two = run(capsys, "--no-cache", "--jobs", "2")
    assert one == two and one[1].count("PFL101") == 6


def test_unreadable_file_is_a_finding_and_others_go_on(project, capsys):
    write(project / "a.py", SYNC_LOOP)
    (project / "b.py").symlink_to(project / "gone.py")  # listed, but reading it fails
    write(project / "c.py", SYNC_LOOP)
    code, out, _ = run(capsys, "--no-cache", "-q")
    assert code == 1
    assert "b.py:1:1: PFL001 cannot read" in out and "a.py:7:18: PFL101" in out and "c.py:7:18: PFL101" in out


def test_trace_subcommand_is_dispatched(capsys):
    code = main(["trace", "/definitely/missing.json"])
    assert code == 2
