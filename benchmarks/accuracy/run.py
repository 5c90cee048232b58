"""Precision per rule and recall per family of perflint on real PyTorch code, against our own labels.

    python benchmarks/accuracy/run.py --mirror DIR [--role labelled|holdout|all] [--select ALL]
                                      [--unlabelled FILE] [--misses FILE]

DIR holds one git repository per entry of corpus.toml: DIR/<owner>+<name>/repo (what this workplace's
`fetch` gives) or DIR/<owner>+<name> (a clone). The .py files at the pinned commit are extracted into
.corpus/<owner>+<name>@<commit>/ (ignored by git; never committed) and linted there, one repository
at a time, as `perflint` would lint it from its root.

Prints, per rule, the findings and how many the labels call right and wrong (precision = right / (right
+ wrong)), and per family the labelled instances and how many a rule of that family reports (recall).
Findings without a verdict are counted and listed (`--unlabelled FILE` writes them, with their
evidence, as JSON lines ready to be judged); so are the instances no rule found (`--misses FILE`).
Labels: labels/<owner>+<name>.jsonl, written by hand following LABELLING.md.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tomllib
from collections import Counter, defaultdict
from pathlib import Path

HERE = Path(__file__).resolve().parent
ROOT = HERE.parents[1]
# An independent blind review of random findings that our labels judged: how far another seasoned reviewer agrees.
SECOND_OPINION = HERE / "second_opinion.jsonl"
sys.path.insert(0, str(ROOT))

from perflint.config import Config  # noqa: E402
from perflint.rule import all_rules  # noqa: E402
from perflint.runner import lint_paths  # noqa: E402

FAMILIES = {  # the rules that report each family of labelled instances
    "sync": {"PFL101", "PFL102", "PFL103", "PFL104", "PFL105", "PFL106", "PFL107", "PFL108", "PFL109"},
    "blocking-copy": {"PFL203"},
    "host-made": {"PFL201", "PFL206"},
    "unfused": {"PFL301"},
    "uncompiled": {"PFL401"},
}


def corpus() -> list[dict]:
    return tomllib.loads((HERE / "corpus.toml").read_text())["repo"]


PACKAGING = ("pyproject.toml", "setup.cfg")  # top level only: whether the project is installable
EXTRACTED = "py+packaging"  # what an extraction holds: a .corpus folder extracted for less is redone


def extract(repo: dict, mirror: Path) -> Path:
    """The repository's .py files at its pinned commit, with the top-level files that say whether it is
    installable (pyproject.toml, setup.cfg), in .corpus/ (extracted once per EXTRACTED)."""
    slug = repo["name"].replace("/", "+")
    out = ROOT / ".corpus" / f"{slug}@{repo['commit'][:12]}"
    marker = out / ".complete"
    if marker.exists() and marker.read_text() == f"{repo['commit']} {EXTRACTED}":
        return out
    candidates = (mirror / slug / "repo" / ".git", mirror / slug / "repo", mirror / slug / ".git", mirror / slug)
    git_dir = next((p for p in candidates if p.exists()), None)
    if git_dir is None:
        sys.exit(f"run.py: error: {repo['name']} is not in {mirror}")
    git = ["git", f"--git-dir={git_dir}"]
    names = subprocess.run([*git, "ls-tree", "-r", "--name-only", repo["commit"]], check=True,
                           capture_output=True, text=True).stdout.splitlines()
    names = [n for n in names if n.endswith(".py") or n in PACKAGING]
    batch = subprocess.run([*git, "cat-file", "--batch"], check=True, capture_output=True,
                           input="".join(f"{repo['commit']}:{n}\n" for n in names).encode()).stdout
    pos = 0
    for name in names:
        header_end = batch.index(b"\n", pos)
        header = batch[pos:header_end].split()
        if header[-1] == b"missing":
            pos = header_end + 1
            continue
        size = int(header[2])
        data = batch[header_end + 1:header_end + 1 + size]
        pos = header_end + 1 + size + 1
        target = out / name
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(data)
    out.mkdir(parents=True, exist_ok=True)  # a repository of notebooks has no .py file to make it
    marker.write_text(f"{repo['commit']} {EXTRACTED}")
    return out


def labels(repo: dict) -> tuple[dict, list, set]:
    """Verdicts by (path, line, code), instances, labelled files."""
    path = HERE / "labels" / (repo["name"].replace("/", "+") + ".jsonl")
    verdicts, instances, files = {}, [], set()
    if path.exists():
        for number, line in enumerate(path.read_text().splitlines(), 1):
            if not line.strip():
                continue
            row = json.loads(line)
            if row["kind"] == "verdict":
                verdicts[(row["path"], row["line"], row["code"])] = row
            elif row["kind"] == "instance":
                instances.append(row)
            elif row["kind"] == "files":
                files |= set(row["paths"])
    return verdicts, instances, files


def reviewed(repo: dict) -> Counter:
    """(code, verdict) of each blind-review verdict on this repository, as the review found the rules: the
    figure for unseen code, whatever the rules report today (LABELLING.md)."""
    path = HERE / "labels" / (repo["name"].replace("/", "+") + ".jsonl")
    out: Counter = Counter()
    if path.exists():
        for line in path.read_text().splitlines():
            row = json.loads(line) if line.strip() else {}
            if row.get("kind") == "verdict" and row.get("reason", "").startswith("blind review"):
                out[(row["code"], row["verdict"])] += 1
    return out


def lint(root: Path, select: list[str] | None) -> list:
    here = Path.cwd()
    os.chdir(root)
    try:
        config = Config(root=root, select=select)
        findings = lint_paths(["."], config, jobs=0, use_cache=False).findings
    finally:
        os.chdir(here)
    return findings


def _second_opinion(findings: list[dict]) -> list[tuple[str, str]]:
    """(our verdict, the second reviewer's) for each finding of this run that both judged."""
    if not SECOND_OPINION.exists():
        return []
    theirs = {(r["repo"], r["path"], r["line"], r["code"]): r["verdict"]
              for r in map(json.loads, SECOND_OPINION.read_text().splitlines()) if r}
    pairs = {key: (f["verdict"], theirs[key]) for f in findings
             if f["verdict"] and (key := (f["repo"], f["path"], f["line"], f["code"])) in theirs}
    return list(pairs.values())


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--mirror", type=Path, required=True, help="folder with one git repository per corpus entry")
    p.add_argument("--role", choices=("labelled", "holdout", "all"), default="labelled")
    p.add_argument("--select", nargs="*", help="rule codes or prefixes (default: the rules on by default)")
    p.add_argument("--unlabelled", type=Path, help="write findings without a verdict here (JSON lines)")
    p.add_argument("--misses", type=Path, help="write labelled instances no rule reports here (JSON lines)")
    p.add_argument("--findings", type=Path, help="write every finding here (JSON lines: compare two runs)")
    p.add_argument("--write", type=Path, metavar="JSON",
                   help="write the figures per rule and role here (perflint/accuracy.json: the rule pages quote it)")
    args = p.parse_args()
    rules = all_rules()
    by_role: dict[tuple[str, str], Counter] = defaultdict(Counter)
    recall: dict[str, Counter] = defaultdict(Counter)
    unlabelled, misses, everything = [], [], []
    unanalysed = []  # PFL001 other than a syntax error: a timeout or a crash hides that file's findings
    blind: Counter = Counter()
    for repo in corpus():
        if args.role != "all" and repo["role"] != args.role:
            continue
        root = extract(repo, args.mirror)
        verdicts, instances, files = labels(repo)
        blind.update(reviewed(repo))
        findings = lint(root, args.select)
        for f in findings:
            if f.code == "PFL001" and not f.message.startswith("cannot parse"):
                unanalysed.append(f"{repo['name']}: {f.path}: {f.message}")
            if f.code not in rules:
                continue
            key = (f.path, f.line, f.code)
            row = verdicts.get(key)
            everything.append({"repo": repo["name"], "path": f.path, "line": f.line, "code": f.code,
                               "verdict": row["verdict"] if row else None, "message": f.message,
                               "evidence": list(f.evidence)})
            by_role[(f.code, repo["role"])].update(("findings", row["verdict"] if row else "unlabelled"))
            if row is None:
                unlabelled.append({"repo": repo["name"], "commit": repo["commit"], "path": f.path, "line": f.line,
                                   "end_line": f.end_line,
                                   "code": f.code, "message": f.message, "evidence": list(f.evidence)})
        by_line = defaultdict(set)
        for f in findings:
            for line in range(f.line, f.end_line + 1):
                by_line[(f.path, line)].add(f.code)
        for inst in instances:
            if inst["path"] not in files:
                continue
            family = inst["family"]
            if family not in FAMILIES:
                continue  # recorded for the future (host-data-copy): no rule reports it yet
            lines = inst.get("lines") or [inst["line"]]
            found = any(by_line[(inst["path"], line)] & FAMILIES[family] for line in lines)
            recall[family]["instances"] += 1
            recall[family]["found"] += found
            if not found:
                misses.append({"repo": repo["name"], **inst})
    counts: dict[str, Counter] = defaultdict(Counter)
    for (code, _), c in by_role.items():
        counts[code].update(c)
    print(f"{'rule':8} {'default':7} {'findings':>8} {'right':>6} {'wrong':>6} {'unlabelled':>10} {'precision':>9}")
    total = Counter()
    for code in sorted(counts):
        c = counts[code]
        judged = c["right"] + c["wrong"]
        precision = f"{100 * c['right'] / judged:.0f}%" if judged else "-"
        default = "on" if rules[code].default else "off"
        print(f"{code:8} {default:7} {c['findings']:8} {c['right']:6} {c['wrong']:6} {c['unlabelled']:10} {precision:>9}")
        if rules[code].default:
            total.update(c)
    judged = total["right"] + total["wrong"]
    if judged:
        print(f"default rules: {total['findings']} findings, {total['right']} right, {total['wrong']} wrong, "
              f"{total['unlabelled']} unlabelled: precision {100 * total['right'] / judged:.1f}%")
    second = _second_opinion(everything)
    if second:
        agree = sum(ours == theirs for ours, theirs in second)
        right = sum(theirs == "right" for _, theirs in second)
        print(f"second opinion ({SECOND_OPINION.name}, a blind review of random labelled findings): {len(second)} still "
              f"reported; it agrees with our verdict on {agree} ({100 * agree / len(second):.0f}%) and calls "
              f"{right} right ({100 * right / len(second):.0f}%)")
    print(f"\n{'family':14} {'instances':>9} {'found':>6} {'recall':>7}")
    for family in FAMILIES:
        r = recall[family]
        if r["instances"]:
            print(f"{family:14} {r['instances']:9} {r['found']:6} {100 * r['found'] / r['instances']:6.0f}%")
    if args.write is not None:
        repos = [f"{r['name']}@{r['commit'][:12]}" for r in corpus() if args.role in ("all", r["role"])]
        table = {code: {role: dict(by_role[(code, role)]) for role in ("labelled", "holdout")
                        if by_role[(code, role)]} for code in sorted(counts)}
        for (code, verdict), n in blind.items():  # also for findings the rules no longer report
            table.setdefault(code, {}).setdefault("reviewed", {})[verdict] = n
        args.write.write_text(json.dumps({
            "command": "python benchmarks/accuracy/run.py --mirror MIRROR --role all --select ALL --write "
                       "perflint/accuracy.json",
            "repositories": repos, "rules": table,
            "recall": {family: dict(recall[family]) for family in FAMILIES if recall[family]["instances"]},
        }, indent=1, sort_keys=True) + "\n")
    # A file the linter gave up on (a timeout, a crash) reports nothing: say so, or its findings vanish unseen
    # (six files timed out this way until a module-level `global` was mended).
    print(f"\nfiles not analysed (a timeout or a crash, not a syntax error): {len(unanalysed)}")
    for line in unanalysed:
        print(f"  {line}")
    if args.unlabelled is not None:
        args.unlabelled.write_text("".join(json.dumps(u) + "\n" for u in unlabelled))
    if args.findings is not None:
        args.findings.write_text("".join(json.dumps(f) + "\n" for f in everything))
    if args.misses is not None:
        args.misses.write_text("".join(json.dumps(m) + "\n" for m in misses))
    return 0


if __name__ == "__main__":
    sys.exit(main())
