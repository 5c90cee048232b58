"""Moved to `perflint.measures.events`; this name stays until perflint/trace imports from there."""
from perflint.measures.events import *  # noqa: F401,F403
