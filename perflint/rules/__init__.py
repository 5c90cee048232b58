"""One module per rule; `perflint.rule.all_rules()` finds them. Shared base classes live in `_base.py`."""
