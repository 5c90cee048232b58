"""PFL9xx: benchmarking hygiene: timing GPU work without a synchronize, timing the first call."""
