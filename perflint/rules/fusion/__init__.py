"""PFL3xx: fusion and vectorization: chains of small kernels, Python loops over tensors, fused ops not used."""
