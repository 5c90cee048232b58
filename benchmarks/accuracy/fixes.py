"""Do perflint's fixes keep real code working? Applies every fix, unsafe ones included, with every rule
on, to a copy of each corpus repository, as a user would (`perflint . --select ALL --fix --unsafe-fixes`),
then compiles each changed file and prints the changed lines for a reviewer to read.

    python benchmarks/accuracy/fixes.py --mirror DIR [--role labelled|holdout|all] [--diff FILE]

Exit status 1 if a fixed file no longer compiles. Whether a fix changes what later lines rely on (a
tensor that now shares memory with an array the code writes to again, a checkpoint key that disappears)
is for the reviewer of the diff; the rules offer such fixes only where they can tell nothing relies on it.
"""

from __future__ import annotations

import argparse
import py_compile
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

from run import corpus, extract

ROOT = Path(__file__).resolve().parents[2]


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirror", type=Path, required=True)
    p.add_argument("--role", choices=("labelled", "holdout", "all"), default="all")
    p.add_argument("--diff", type=Path, help="write the changes the fixes made here (unified diff)")
    args = p.parse_args()
    broken, diffs = [], []
    with tempfile.TemporaryDirectory() as tmp:
        for repo in corpus():
            if args.role != "all" and repo["role"] != args.role:
                continue
            copy = Path(tmp) / extract(repo, args.mirror).name
            shutil.copytree(extract(repo, args.mirror), copy)
            git = ["git", "-C", str(copy)]
            subprocess.run([*git, "init", "-q"], check=True)
            subprocess.run([*git, "add", "-A"], check=True)
            subprocess.run([*git, "-c", "user.name=x", "-c", "user.email=x@x", "commit", "-qm", "base"], check=True)
            subprocess.run([sys.executable, "-m", "perflint", ".", "--select", "ALL", "--fix", "--unsafe-fixes",
                            "--no-cache", "--quiet", "--exit-zero"], cwd=copy, check=True,
                           stdout=subprocess.DEVNULL, env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
            changed = subprocess.run([*git, "diff", "--name-only"], check=True, capture_output=True,
                                     text=True).stdout.split()
            diff = subprocess.run([*git, "diff", "-U1"], check=True, capture_output=True, text=True).stdout
            edits = sum(1 for line in diff.splitlines() if line.startswith("+") and not line.startswith("+++"))
            for name in changed:
                try:
                    py_compile.compile(str(copy / name), doraise=True, cfile=str(Path(tmp) / "x.pyc"))
                except py_compile.PyCompileError as e:
                    broken.append(f"{repo['name']}/{name}: {e.msg.strip().splitlines()[-1]}")
            diffs.append(diff)
            print(f"{repo['name']:45} {len(changed):3} files fixed, {edits:3} lines changed")
    if args.diff is not None:
        args.diff.write_text("".join(diffs))
    for b in broken:
        print(f"does not compile after the fixes: {b}")
    print("every fixed file compiles" if not broken else f"{len(broken)} fixed files do not compile")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
