"""Element sizes of the dtype names traces write: "float", "c10::Half", "long int" in `Input type`,
"Float", "Long" in NCCL kernel args. One table for the roofline, the collective sizes and the scaling model."""

from __future__ import annotations

_BYTES = {
    "float": 4, "float32": 4, "double": 8, "float64": 8, "half": 2, "float16": 2, "bfloat16": 2,
    "long": 8, "long int": 8, "int64": 8, "int": 4, "int32": 4, "short": 2, "short int": 2, "int16": 2,
    "char": 1, "signed char": 1, "int8": 1, "byte": 1, "unsigned char": 1, "uint8": 1, "bool": 1,
    "float8_e4m3fn": 1, "float8_e5m2": 1, "float8_e4m3fnuz": 1, "float8_e5m2fnuz": 1,
    "complex<float>": 8, "complex<double>": 16, "complex<half>": 4,
}
# The precision column of the peak table (perflint.trace.peaks) a dtype computes at.
_PRECISION = {"float": "fp32", "float32": "fp32", "half": "bf16", "float16": "bf16", "bfloat16": "bf16",
              "double": "fp64", "float64": "fp64"}


def _key(name: str) -> str:
    return name.strip().lower().replace("c10::", "")


def dtype_size(name: object) -> int | None:
    """Bytes per element of a dtype name, None when the name is not a known dtype ("Scalar", "")."""
    return _BYTES.get(_key(name)) if isinstance(name, str) else None


def precision(name: object) -> str | None:
    """"fp32", "bf16" (half and bfloat16 run at the same tensor-core rate), "fp8" or "fp64"."""
    if not isinstance(name, str):
        return None
    key = _key(name)
    return "fp8" if key.startswith("float8") else _PRECISION.get(key)
