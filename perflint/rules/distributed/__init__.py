"""PFL7xx: distributed training: DataParallel, all-reduces during accumulation, unused-parameter search."""
