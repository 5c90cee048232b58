"""PFL2xx: host/device transfers: tensors made on the host then moved, blocking copies, redundant copies."""
