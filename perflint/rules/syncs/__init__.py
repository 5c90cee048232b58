"""PFL1xx: hidden device-to-host syncs. The rules share `sites.py`, which finds every wait of a file once."""
