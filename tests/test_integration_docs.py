"""docs/integrations.md and docs/github-actions-example.yml: every snippet is valid in its format, names
hooks, extras, options and plugins that exist, and the documented perflint commands produce the format
that the next step (upload-sarif, GitLab's codequality report) reads."""

from __future__ import annotations

import configparser
import json
import re
import shlex
import sys
from pathlib import Path

import pytest
import yaml

from perflint.cli import build_parser, main
from tests.conftest import SYNC_LOOP

if sys.version_info >= (3, 11):
    import tomllib
else:  # pragma: no cover
    import tomli as tomllib

ROOT = Path(__file__).resolve().parents[1]
DOC = (ROOT / "docs" / "integrations.md").read_text()
WORKFLOW = yaml.safe_load((ROOT / "docs" / "github-actions-example.yml").read_text())
BLOCKS = re.findall(r"```(\w+)\n(.*?)```", DOC, re.S)
EXTRAS = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["optional-dependencies"]


def blocks(lang: str) -> list[str]:
    return [body for kind, body in BLOCKS if kind == lang]


def commands(text: str, program: str) -> list[list[str]]:
    """Every command line of `program` in a shell snippet, as argv without the program name."""
    out = []
    for line in text.splitlines():
        argv = shlex.split(line.strip().removeprefix("$ ").removeprefix("- "), comments=True)
        if argv[:1] == [program]:
            out.append(argv[1:])
    return out


def steps():
    return [step for job in WORKFLOW["jobs"].values() for step in job["steps"]]


def run_lines():
    return "\n".join(step["run"] for step in steps() if "run" in step)


def pytest_options() -> set[str]:
    """The options pytest_perf adds to pytest."""
    from pytest_perf import plugin

    class Recorder:
        names: set[str] = set()

        def getgroup(self, *args, **kwargs):
            return self

        def addoption(self, *names, **kwargs):
            self.names.update(names)

        def addini(self, *args, **kwargs):
            pass

    recorder = Recorder()
    plugin.pytest_addoption(recorder)
    return recorder.names


def test_workflow_is_a_valid_actions_workflow():
    assert WORKFLOW["name"] and set(WORKFLOW.get("on", WORKFLOW.get(True))) == {"push", "pull_request"}
    for job in WORKFLOW["jobs"].values():
        assert job["runs-on"] and job["steps"]
        assert all(("uses" in s) != ("run" in s) for s in job["steps"])
    upload = [s for s in steps() if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    assert len(upload) == 1
    job = next(j for j in WORKFLOW["jobs"].values() if upload[0] in j["steps"])
    assert job["permissions"]["security-events"] == "write"


def test_documented_commands_parse_with_the_real_command_lines():
    found = commands(run_lines(), "perflint") + [c for b in blocks("console") for c in commands(b, "perflint")] \
        + [c for b in blocks("yaml") for c in commands(b, "perflint")]
    formats = {argv[argv.index("--output-format") + 1] for argv in found if "--output-format" in argv}
    assert formats >= {"github", "sarif", "gitlab"}
    for argv in found:
        build_parser().parse_args(argv)  # exits 2 on an unknown option or format
    options = pytest_options()
    for argv in commands(run_lines(), "pytest") + [c for b in blocks("console") for c in commands(b, "pytest")]:
        assert {a for a in argv if a.startswith("--")} <= options, argv


def test_installed_extras_exist():
    for spec in re.findall(r'torch-perflint\[(\w+)\]', run_lines() + DOC):
        assert spec in EXTRAS, spec
    assert any(dep.startswith("torch-tb-profiler") for dep in EXTRAS["tensorboard"])
    assert "deprecated" in DOC.split("## Perf traces")[1]


def test_workflow_sarif_command_writes_the_file_that_is_uploaded(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SYNC_LOOP)
    (upload,) = [s for s in steps() if s.get("uses", "").startswith("github/codeql-action/upload-sarif@")]
    (sarif_cmd,) = [c for c in commands(run_lines(), "perflint") if "sarif" in c]
    assert main([*sarif_cmd, "--no-cache"]) == 0  # --exit-zero: the upload step still runs
    sarif = json.loads((tmp_path / upload["with"]["sarif_file"]).read_text())
    assert sarif["version"] == "2.1.0" and sarif["runs"][0]["results"][0]["ruleId"] == "PFL101"


def test_workflow_annotation_command_prints_workflow_commands(tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "train.py").write_text(SYNC_LOOP)
    (github_cmd,) = [c for c in commands(run_lines(), "perflint") if "github" in c]
    assert main([*github_cmd, "--no-cache"]) == 1  # the job fails on findings
    out = capsys.readouterr().out.strip().splitlines()
    annotation = re.compile(r"::(warning|error|notice) file=[^,]+,line=\d+,col=\d+,[^:]*::.+")
    assert out and all(annotation.fullmatch(line) for line in out)


def test_precommit_snippet_names_the_manifest_hooks():
    manifest = {h["id"] for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    configs = [yaml.safe_load(b) for b in blocks("yaml") if "repos:" in b]
    assert len(configs) == 1
    (repo,) = configs[0]["repos"]
    assert repo["repo"].startswith("https://") and repo["rev"]
    assert {h["id"] for h in repo["hooks"]} == manifest


def test_gitlab_snippet_uploads_the_report_its_command_writes(tmp_path, monkeypatch):
    (job,) = [yaml.safe_load(b)["perflint"] for b in blocks("yaml") if "codequality" in b]
    (cmd,) = [c for line in job["script"] for c in commands(line, "perflint")]
    assert cmd[cmd.index("-o") + 1] == job["artifacts"]["reports"]["codequality"]
    monkeypatch.chdir(tmp_path)
    (tmp_path / "a.py").write_text(SYNC_LOOP)
    assert main([*cmd, "--no-cache"]) == 0
    issues = json.loads((tmp_path / job["artifacts"]["reports"]["codequality"]).read_text())
    assert issues and all({"description", "check_name", "fingerprint", "severity", "location"} <= set(i)
                          for i in issues)


def test_flake8_and_ruff_snippets():
    parsed = []
    for body in blocks("ini"):
        cfg = configparser.ConfigParser()
        cfg.read_string(body)
        parsed.append(cfg)
    (local,) = [c for c in parsed if c.has_section("flake8:local-plugins")]
    name, target = (s.strip() for s in local["flake8:local-plugins"]["extension"].strip().split("="))
    module, cls = target.split(":")
    assert name == "PFL" and hasattr(pytest.importorskip(module), cls)
    (ruff,) = [tomllib.loads(b) for b in blocks("toml") if "ruff" in b]
    assert "PFL" in ruff["tool"]["ruff"]["lint"]["external"]
