"""PFL5xx: data loading: loader workers, persistent workers, pinned memory."""
