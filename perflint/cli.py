"""The `perflint` command. Exit codes: 0 no findings, 1 findings (or a broken budget for `trace`),
2 usage, configuration or input error (one line on stderr, never a traceback), 130 interrupted,
141 when the reader of the output went away (`perflint | head`)."""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections import Counter
from pathlib import Path

from perflint import __version__
from perflint.usage import Parser, UsageError

# The linter's modules (libcst through perflint.rule) are imported once `main` knows it is linting:
# `perflint trace` must not pay for them.
SUBCOMMANDS = {"trace": "perflint.trace.cli"}
EXIT_CLEAN, EXIT_FINDINGS, EXIT_ERROR, EXIT_INTERRUPTED, EXIT_BROKEN_PIPE = 0, 1, 2, 130, 141
USAGE = "perflint [OPTIONS] [PATH ...]\n       perflint trace TRACE_FILE_OR_FOLDER ... [OPTIONS]"


def _codes(text: str) -> list[str]:
    return [c for c in text.replace(",", " ").split() if c]


def build_parser() -> argparse.ArgumentParser:
    from perflint.reports import FORMATS

    p = Parser(prog="perflint", usage=USAGE,
               description="Find PyTorch performance antipatterns without running the code. "
                           "`perflint trace --help` checks recorded profiler traces against budgets.")
    p.add_argument("paths", nargs="*", default=["."], help="files or folders to lint (default: .)")
    p.add_argument("--select", type=_codes,
                   help="rule codes, prefixes or names to enable (replaces the default set)")
    p.add_argument("--ignore", type=_codes, default=[], help="rule codes, prefixes or names to disable")
    p.add_argument("--extend-select", type=_codes, default=[], help="codes, prefixes or names to enable in addition")
    p.add_argument("--output-format", choices=FORMATS, default="text")
    p.add_argument("-o", "--output-file", help="write the report to this file instead of stdout")
    p.add_argument("--statistics", action="store_true", help="print counts per rule instead (text or json)")
    p.add_argument("--exit-zero", action="store_true", help="exit 0 even when there are findings")
    p.add_argument("--config", type=Path, help="settings file (pyproject.toml or perflint.toml)")
    p.add_argument("--jobs", "-j", type=int, default=0, help="worker processes (default: one per core)")
    p.add_argument("--no-cache", action="store_true", help="do not read or write .perflint_cache/")
    p.add_argument("--list-rules", action="store_true", help="print the rule table and exit")
    p.add_argument("--explain", metavar="CODE", help="print a rule's page (by code or name) and exit")
    p.add_argument("--fix", action="store_true", help="apply safe fixes in place")
    p.add_argument("--unsafe-fixes", action="store_true", help="with --fix or --diff, also apply unsafe fixes")
    p.add_argument("--diff", action="store_true", help="print the fixes as a unified diff; change nothing")
    p.add_argument("--quiet", "-q", action="store_true", help="print findings only, no summary")
    p.add_argument("--trace", metavar="TRACE", help="mark each finding with what this profiler trace measured at "
                   "its line, and list the costly events with no finding (needs torch-perflint[trace])")
    p.add_argument("--version", action="version", version=f"perflint {__version__}")
    return p


def _list_rules() -> str:
    from tabulate import tabulate

    from perflint.rule import TOOL_RULES, all_rules

    rows = [(r.code, r.name, r.family(), "on" if r.default else "off", "yes" if r.gpu_only else "",
             r.fix_safety if r.fix_safety != "none" else "", r.summary)
            for r in [*TOOL_RULES, *all_rules().values()]]
    return tabulate(rows, headers=["code", "name", "family", "default", "gpu", "fix", "summary"])


def notice(message: str) -> None:
    """A file or folder left out, and why: on stderr, never lost in the report."""
    print(f"perflint: {message}", file=sys.stderr)


class _Progress:
    """`perflint: 120/417 files` on a terminal's stderr, for runs long enough to wonder about."""

    def __init__(self) -> None:
        self.start = time.monotonic()
        self.shown = 0.0

    def __call__(self, done: int, total: int) -> None:
        now = time.monotonic()
        if now - self.start > 1 and (now - self.shown > 0.1 or done == total):
            self.shown = now
            sys.stderr.write(f"\rperflint: {done}/{total} files" + ("\r\033[K" if done == total else ""))
            sys.stderr.flush()


def main(argv: list[str] | None = None) -> int:
    process = argv is None  # run as the `perflint` command: the process is ours to tune
    argv = sys.argv[1:] if argv is None else argv
    if argv and argv[0] in SUBCOMMANDS:
        return _subcommand(argv, process)
    try:
        code = _run(build_parser().parse_args(argv))
        sys.stdout.flush()  # here, where a closed pipe can still be caught
        return code
    except UsageError as e:
        print(f"perflint: error: {e}", file=sys.stderr)
        return EXIT_ERROR
    except KeyboardInterrupt:
        print("perflint: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:
        # The reader left (`| head`): say nothing more, and keep the interpreter's final flush quiet too.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_BROKEN_PIPE


def _subcommand(argv: list[str], process: bool) -> int:
    """`perflint trace ...`, dispatched before anything of the linter is imported."""
    import importlib
    import os

    if process:
        os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")  # numpy's BLAS threads: unused, and slow to start
        import gc
        gc.disable()  # a short process that ends in os._exit: nothing to collect, and full passes over
        # the trace's 10^5 tuples (tracked by the GC until a pass untracks them) cost 5-20% of the run
    try:
        command = importlib.import_module(SUBCOMMANDS[argv[0]])
    except ModuleNotFoundError as exc:  # numpy: in the [trace] extra, the linter does not need it
        print(f"perflint {argv[0]}: error: needs the '{exc.name}' package: "
              f"pip install 'torch-perflint[{argv[0]}]'", file=sys.stderr)
        return EXIT_ERROR
    code = command.main(argv[1:])
    if process:  # the report is out: the OS frees the trace's 10^5 objects faster than the interpreter
        try:
            sys.stdout.flush()
            sys.stderr.flush()
        finally:
            os._exit(code)
    return code


def _run(args: argparse.Namespace) -> int:
    from perflint.config import code_of, load, start_folder
    from perflint.reports import render
    from perflint.rule import rule_info

    if args.list_rules:
        print(_list_rules())
        return EXIT_CLEAN
    if args.explain:
        from perflint.docs import effects, rule_page

        try:
            rule = rule_info(code_of(args.explain))
        except KeyError:
            raise UsageError(f"--explain: unknown rule code or name {args.explain!r}") from None
        print(rule_page(rule, effects().get(rule.code)))
        return EXIT_CLEAN
    if args.jobs < 0:
        raise UsageError("--jobs must be >= 0")
    if args.diff and args.output_format != "text":
        raise UsageError(f"--diff prints a patch; --output-format {args.output_format} does not apply to it")
    if args.statistics and args.output_format not in ("text", "json"):
        raise UsageError(f"--statistics prints text or json, not {args.output_format}")
    if args.output_file and not Path(args.output_file).absolute().parent.is_dir():
        raise UsageError(f"-o {args.output_file}: no such folder: {Path(args.output_file).absolute().parent}")
    config = load(args.config, start_folder(args.paths))
    if args.select is not None:
        config.select = args.select
    config.ignore += args.ignore
    config.extend_select += args.extend_select
    config.enabled_codes()  # a typo in a command-line code is an error before any work

    from perflint.runner import lint_paths

    progress = _Progress() if sys.stderr.isatty() and not args.quiet else None
    run = lint_paths(args.paths, config, jobs=args.jobs, use_cache=not args.no_cache, notice=notice,
                     progress=progress)
    if args.diff:
        from perflint.fix import apply_fixes

        _, fixes = apply_fixes(run, unsafe=args.unsafe_fixes, write=False, out=sys.stdout, notice=notice)
        if not args.quiet:
            print(_would_fix(run.findings, fixes, args.unsafe_fixes), file=sys.stderr)
        return EXIT_FINDINGS if fixes and not args.exit_zero else EXIT_CLEAN
    if args.fix:
        from perflint.fix import apply_fixes

        run.findings, fixes = apply_fixes(run, unsafe=args.unsafe_fixes, write=True, out=sys.stdout, notice=notice)
        if not args.quiet and args.output_format == "text":
            print(f"Fixed {_count(fixes, 'finding')}.", file=sys.stderr)
    findings = run.findings
    if args.statistics:
        output = _statistics(findings, args.output_format, args.unsafe_fixes)
    else:
        rules = [rule_info(c) for c in config.enabled_codes()]
        options = {}
        if args.output_format == "text":
            color = args.output_file is None and sys.stdout.isatty() and not os.environ.get("NO_COLOR")
            options = {"color": color, "unsafe": args.unsafe_fixes}
        output = render(args.output_format, findings, rules, **options)
    if args.trace:
        output = _with_trace(args, findings, output)
        if output is None:
            return EXIT_ERROR
    if args.output_file:
        try:
            Path(args.output_file).write_text(output + "\n", encoding="utf-8")
        except OSError as e:
            raise UsageError(f"-o {args.output_file}: cannot write: {e.strerror or e}") from None
    elif output:
        print(output)
    if args.output_format == "text" and not args.quiet:
        summary = _summary(findings, len(run.files), run.skipped, args.unsafe_fixes, args.fix)
        print(summary, file=sys.stderr if args.output_file else sys.stdout)
    return EXIT_FINDINGS if findings and not args.exit_zero else EXIT_CLEAN


def _with_trace(args: argparse.Namespace, findings, output: str) -> str | None:
    """The report joined with a trace (perflint.trace.join); None after a one-line error."""
    if args.output_format not in ("text", "json") or args.statistics:
        print("perflint: error: --trace works with --output-format text or json", file=sys.stderr)
        return None
    try:
        from perflint.trace.join import join, render as render_join
        from perflint.trace.load import TraceError
    except ModuleNotFoundError as exc:
        print(f"perflint: error: --trace needs the '{exc.name}' package: pip install 'torch-perflint[trace]'",
              file=sys.stderr)
        return None
    try:
        return render_join(join(findings, args.trace), args.output_format, output)
    except TraceError as exc:
        print(f"perflint: error: --trace {exc}", file=sys.stderr)
        return None


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" + ("" if n == 1 else "s")


def _fixable(findings: list) -> tuple[int, int]:
    """How many findings have a safe fix, and how many an unsafe one."""
    safe = sum(1 for f in findings if f.fix is not None and f.fix.applicability == "safe")
    return safe, sum(1 for f in findings if f.fix is not None) - safe


def _summary(findings: list, checked: int, skipped: int, unsafe: bool, fixing: bool) -> str:
    """ruff's summary: what was found where, then what `--fix` would do about it."""
    left_out = f" {skipped} skipped (see above)." if skipped else ""
    if not findings:
        return f"All clear: {_count(checked, 'file')} checked.{left_out}"
    files = len({f.path for f in findings})
    where = _count(files, "file") if files == checked else f"{files} of {_count(checked, 'file')}"
    lines = [f"Found {_count(len(findings), 'finding')} in {where}.{left_out}"]
    safe, unsafe_only = _fixable(findings)
    command = "perflint --fix --unsafe-fixes" if unsafe else "perflint --fix"
    fixable = safe + unsafe_only if unsafe else safe
    if fixable and not fixing:
        more = f" ({unsafe_only} more with `--unsafe-fixes`)" if unsafe_only and not unsafe else ""
        lines.append(f"[*] {fixable} fixable with `{command}`{more}.")
    elif unsafe_only and not unsafe:
        lines.append(f"{_count(unsafe_only, 'unsafe fix')} can be applied with `--unsafe-fixes`.")
    return "\n".join(lines)


def _would_fix(findings: list, fixes: int, unsafe: bool) -> str:
    """The last line of `--diff`, with the reason when there is nothing to fix."""
    lines = [f"Would fix {_count(fixes, 'finding')}."]
    if not findings:
        lines.append("Nothing was found.")
    safe, unsafe_only = _fixable(findings)
    if unsafe_only and not unsafe:
        lines.append(f"{unsafe_only} more with `--unsafe-fixes`.")
    without = len(findings) - safe - unsafe_only
    if without:
        lines.append(f"{_count(without, 'finding')} without an automatic fix.")
    return " ".join(lines)


def _statistics(findings: list, fmt: str, unsafe: bool) -> str:
    import json

    from tabulate import tabulate

    counts = Counter(f.code for f in findings)
    names = {f.code: f.name for f in findings}
    fixable = Counter(f.code for f in findings if f.fix is not None and (unsafe or f.fix.applicability == "safe"))
    if fmt == "json":
        return json.dumps([{"code": c, "name": names[c], "count": n, "fixable": fixable[c]}
                           for c, n in sorted(counts.items())], indent=2)
    rows = [(c, names[c], n, fixable[c] or "") for c, n in sorted(counts.items())]
    return tabulate(rows, headers=["code", "name", "count", "fixable"]) if counts else ""
