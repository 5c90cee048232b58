"""TOML for settings and budget files: the standard library's tomllib, or tomli on Python 3.10 (a
dependency there), with one error type."""

from __future__ import annotations

import sys

if sys.version_info >= (3, 11):
    from tomllib import TOMLDecodeError, loads
else:  # pragma: no cover
    from tomli import TOMLDecodeError, loads

__all__ = ["TOMLDecodeError", "loads"]
