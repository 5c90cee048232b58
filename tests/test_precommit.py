"""The real `pre-commit try-repo` installs perflint's hooks from this repository and runs them on a sample
repository; the hook environment must not contain torch.

pre-commit installs a hook repository from a git commit, so the working tree (tracked and untracked,
not ignored) is copied into a fresh repository with one commit. Installing needs PyPI (setuptools,
libcst, tabulate): without it the test is skipped with pip's reason, never passed.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from tests.expect import reported_fixtures
import yaml

from perflint.engine import Linter
from perflint.rule import all_rules
from tests.conftest import SYNC_LOOP

ROOT = Path(__file__).resolve().parents[1]
PRE_COMMIT = shutil.which("pre-commit") or shutil.which("pre-commit", path=os.path.dirname(sys.executable))
OFFLINE = re.compile(r"No matching distribution|Could not find a version|Failed to establish a new connection"
                     r"|Temporary failure in name resolution|Network is unreachable|Max retries exceeded"
                     r"|ProxyError|Could not fetch URL")
SAFE_RULE = next((r for r in all_rules().values() if r.fix_safety == "safe" and r.default), None)

pytestmark = [pytest.mark.skipif(PRE_COMMIT is None, reason="pre-commit is not installed (pip install pre-commit)"),
              pytest.mark.skipif(shutil.which("git") is None, reason="git is not installed")]


def git(*args, cwd):
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout


def commit_copy_of_working_tree(dest: Path) -> Path:
    """The working tree as pre-commit would see it after `git add -A && git commit`."""
    listed = git("ls-files", "-z", "--cached", "--others", "--exclude-standard", cwd=ROOT).split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file() and not rel.startswith((".venv/", "fixtures/")):
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    git("init", "-q", cwd=dest)
    git("add", "-A", cwd=dest)
    git("commit", "-q", "-m", "snapshot", cwd=dest)
    return dest


@pytest.fixture(scope="module")
def repos(tmp_path_factory):
    """(source: the committed copy of this repository, sample: an empty git repository to run hooks in)."""
    base = tmp_path_factory.mktemp("precommit")
    source = commit_copy_of_working_tree(base / "perflint-src")
    sample = base / "sample"
    sample.mkdir()
    git("init", "-q", cwd=sample)
    return source, sample


def pre_commit(*args: str, cwd: Path, home: Path) -> tuple[int, str]:
    """Run pre-commit; skip when it could not reach PyPI, fail on any other error of pre-commit's own."""
    git("add", "-A", cwd=cwd)
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    env.pop("VIRTUAL_ENV", None)
    r = subprocess.run([PRE_COMMIT, *args], cwd=cwd, env=env, capture_output=True, text=True, timeout=600)
    output = r.stdout + r.stderr
    if r.returncode == 3 or "An unexpected error has occurred" in output:
        log = home / "pre-commit.log"
        detail = output + (log.read_text() if log.exists() else "")
        offline = OFFLINE.search(detail)
        if offline:
            pytest.skip(f"pre-commit could not install the hook environment from PyPI: {offline.group(0)}")
        pytest.fail(f"pre-commit failed:\n{detail[-6000:]}")
    return r.returncode, output


def test_manifest_declares_both_hooks_as_python_hooks():
    hooks = {h["id"]: h for h in yaml.safe_load((ROOT / ".pre-commit-hooks.yaml").read_text())}
    assert set(hooks) == {"perflint", "perflint-fix"}
    for hook in hooks.values():
        assert hook["language"] == "python" and hook["types"] == ["python"] and hook["require_serial"] is False
        assert hook["entry"].split()[0] == "perflint"
    assert "--fix" in hooks["perflint-fix"]["entry"].split()


@pytest.mark.skipif(SAFE_RULE is None, reason="no rule with a safe fix is registered")
def test_try_repo_runs_both_hooks(repos, tmp_path):
    """`pre-commit try-repo` (which installs into a temporary store) with every hook of the manifest."""
    source, sample = repos
    example = next(ex for ex in reported_fixtures(SAFE_RULE.code) if any(f.fix for f in Linter([SAFE_RULE]).lint_source(ex, "x.py")))
    (sample / "train.py").write_text(SYNC_LOOP)
    (sample / "clean.py").write_text("import torch\nx = torch.zeros(3)\n")
    (sample / "fixme.py").write_text(example)
    code, out = pre_commit("try-repo", str(source), "--files", "train.py", "clean.py", "fixme.py",
                           cwd=sample, home=tmp_path / "home")
    assert code == 1
    perflint_part, fix_part = out.split("perflint (apply safe fixes)", 1)
    assert re.search(r"perflint\.+Failed", perflint_part) and "train.py:7:18: PFL101" in perflint_part
    assert "fixme.py:" in perflint_part and SAFE_RULE.code in perflint_part and "clean.py:" not in out
    assert "files were modified by this hook" in fix_part
    fixed = (sample / "fixme.py").read_text()
    assert fixed != example and not [f for f in Linter([SAFE_RULE]).lint_source(fixed, "x.py") if f.fix]
    assert (sample / "train.py").read_text() == SYNC_LOOP  # nothing to fix there


def test_configured_hooks_install_without_torch(repos, tmp_path):
    """The `.pre-commit-config.yaml` users write (docs/integrations.md); its environment has no torch."""
    source, sample = repos
    rev = git("rev-parse", "HEAD", cwd=source).strip()
    config = {"repos": [{"repo": str(source), "rev": rev, "hooks": [{"id": "perflint"}, {"id": "perflint-fix"}]}]}
    (sample / ".pre-commit-config.yaml").write_text(yaml.safe_dump(config))
    (sample / "clean.py").write_text("x = 1\n")
    home = tmp_path / "home"
    code, out = pre_commit("run", "--files", "clean.py", cwd=sample, home=home)
    assert code == 0 and re.search(r"perflint\.+Passed", out) and re.search(r"safe fixes\)\.+Passed", out)
    envs = [p for p in home.glob("repo*/py_env-*") if (p / "bin" / "python").exists()]
    assert len(envs) == 1, f"expected one hook environment under {home}: {envs}"
    probe = "import importlib.util as u; print(u.find_spec('torch') is None, u.find_spec('libcst') is not None)"
    r = subprocess.run([str(envs[0] / "bin" / "python"), "-c", probe], capture_output=True, text=True, check=True)
    assert r.stdout.split() == ["True", "True"], f"torch must be absent and libcst present: {r.stdout}"
