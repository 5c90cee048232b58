"""Moved to `perflint.measures.budgets`; this name stays until perflint/trace imports from there."""
from perflint.measures.budgets import *  # noqa: F401,F403
from perflint.measures.budgets import format_value  # noqa: F401
