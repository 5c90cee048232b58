"""PFL8xx: numerics and tensor cores: TF32, cuDNN autotuning, shapes that miss tensor-core tiles."""
