"""Peak throughput and memory bandwidth of the GPUs a trace's `deviceProperties` name, for the roofline.

Every row gives the vendor's published dense figures (no structured sparsity) and the document they come
from. FLOP/s are per precision: "fp32" the vector (non-tensor) units, "tf32", "bf16" (= fp16) and "fp8"
the tensor/matrix units; a precision a row does not list is None (the datasheet gives none we trust).
An AMD MI250/MI250X is two GCDs that ROCm shows as two devices, and a trace records one of them: its
rows hold half the package's figures. A GPU not in the table is reported as unknown; the achieved rates
are still computed, only the fraction of peak is missing.
"""

from __future__ import annotations

import re
from typing import Mapping, NamedTuple


class Peak(NamedTuple):
    """A GPU's datasheet peaks, with the document they come from."""

    gpu: str
    tflops: Mapping[str, float | None]  # precision -> dense TFLOP/s
    tbps: float  # memory bandwidth, TB/s
    source: str  # the datasheet or whitepaper the figures come from

    def flops(self, precision: str) -> float | None:
        """FLOP/s at a precision ("fp32", "tf32", "bf16", "fp8"), None when the row lacks it."""
        value = self.tflops.get(precision)
        return value * 1e12 if value else None

    def ridge(self, precision: str) -> float | None:
        """Arithmetic intensity (FLOP/byte) above which a kernel at this precision is compute-bound."""
        flops = self.flops(precision)
        return flops / (self.tbps * 1e12) if flops else None


def _row(gpu, fp32, tf32, bf16, fp8, tbps, source):
    return Peak(gpu, {"fp32": fp32, "tf32": tf32, "bf16": bf16, "fp8": fp8}, tbps, source)


_V100 = "NVIDIA Tesla V100 datasheet (volta-v100-datasheet-update-us-1165301-r5), SXM2 column"
_A100 = "NVIDIA A100 Tensor Core GPU datasheet (nvidia-a100-datasheet-us-nvidia-1758950-r4-web)"
_H100 = "NVIDIA H100 Tensor Core GPU datasheet (resources.nvidia.com/en-us-tensor-core/nvidia-tensor-core-gpu-datasheet)"
_H200 = "NVIDIA H200 Tensor Core GPU datasheet (hpc-datasheet-sc23-h200-datasheet-3002446)"
_MI200 = "AMD Instinct MI200 series datasheet (amd-instinct-mi200-datasheet); per GCD: half the package"

# (pattern on the device name, row); the first match wins, so specific names precede general ones.
PEAKS: list[tuple[re.Pattern, Peak]] = [(re.compile(p, re.IGNORECASE), r) for p, r in [
    (r"V100S", _row("V100S PCIe", 16.4, None, 130, None, 1.134, "NVIDIA V100S datasheet (v100s-datasheet)")),
    (r"V100.*PCIE", _row("V100 PCIe", 14, None, 112, None, 0.9, "NVIDIA Tesla V100 datasheet, PCIe column")),
    (r"V100.*DGXS", _row("V100 DGX Station", 15.7, None, 125, None, 0.9,
                         "NVIDIA DGX Station datasheet: 4 x Tesla V100 SXM2 (the SXM2 figures per GPU)")),
    (r"V100", _row("V100 SXM2", 15.7, None, 125, None, 0.9, _V100)),
    (r"\bT4\b", _row("T4", 8.1, None, 65, None, 0.32, "NVIDIA T4 datasheet (t4-tensor-core-datasheet-951643)")),
    (r"A100.*80GB.*PCIE|A100.*PCIE.*80GB", _row("A100 80GB PCIe", 19.5, 156, 312, None, 1.935, _A100)),
    (r"A100.*80GB", _row("A100 80GB SXM", 19.5, 156, 312, None, 2.039, _A100)),
    (r"A100", _row("A100 40GB", 19.5, 156, 312, None, 1.555, _A100 + ", 40GB (PG509-200 is the 40GB SXM4 board)")),
    (r"A10G?\b", _row("A10", 31.2, 62.5, 125, None, 0.6, "NVIDIA A10 datasheet (nvidia-a10-datasheet)")),
    (r"L40S", _row("L40S", 91.6, 183, 362.05, 733, 0.864, "NVIDIA L40S datasheet (l40s-datasheet-28413)")),
    (r"\bL4\b", _row("L4", 30.3, 60, 121, 242.5, 0.3, "NVIDIA L4 datasheet (l4-gpu-datasheet)")),
    (r"H100.*NVL", _row("H100 NVL", 60, 417.5, 835.5, 1670.5, 3.9, _H100 + ", H100 NVL column")),
    (r"H100.*PCIE", _row("H100 PCIe", 51, 378, 756, 1513, 2.0, _H100 + ", H100 PCIe column")),
    (r"H100", _row("H100 SXM", 67, 494.5, 989.5, 1979, 3.35, _H100 + ", H100 SXM column")),
    (r"H200.*NVL", _row("H200 NVL", 60, 417.5, 835.5, 1670.5, 4.8, _H200 + ", H200 NVL column")),
    (r"H200", _row("H200 SXM", 67, 494.5, 989.5, 1979, 4.8, _H200 + ", H200 SXM column")),
    (r"B200", _row("B200", None, 1100, 2250, 4500, 8.0,
                   "NVIDIA DGX B200 datasheet (dgx-b200-datasheet): 8-GPU totals / 8, sparse figures / 2")),
    (r"RTX\s*3090", _row("GeForce RTX 3090", 35.6, 35.6, 71, None, 0.936,
                         "NVIDIA Ampere GA102 GPU architecture whitepaper v2 (FP16 tensor with FP32 accumulate)")),
    (r"RTX\s*4090", _row("GeForce RTX 4090", 82.6, 82.6, 165.2, 330.3, 1.008,
                         "NVIDIA Ada GPU architecture whitepaper (FP16/FP8 tensor with FP32 accumulate)")),
    (r"RTX\s*5090", _row("GeForce RTX 5090", 104.8, 104.8, 209.5, 419, 1.792,
                         "NVIDIA RTX Blackwell GPU architecture whitepaper (FP16/FP8 tensor with FP32 accumulate)")),
    (r"MI250X", _row("MI250X (one GCD)", 23.95, None, 191.5, None, 1.638, _MI200 + ", MI250X column")),
    (r"MI250", _row("MI250 (one GCD)", 22.65, None, 181.05, None, 1.638, _MI200 + ", MI250 column")),
    (r"MI300A", _row("MI300A", 122.6, 490.3, 980.6, 1961.2, 5.3, "AMD Instinct MI300A datasheet")),
    (r"MI300X|MI300", _row("MI300X", 163.4, 653.7, 1307.4, 2614.9, 5.3, "AMD Instinct MI300X datasheet")),
    (r"MI325X", _row("MI325X", 163.4, 653.7, 1307.4, 2614.9, 6.0, "AMD Instinct MI325X datasheet")),
]]

# ROCm sometimes names every device "AMD Radeon Graphics"; the compute-unit count still tells the part.
_AMD_BY_CUS = {104: "MI250", 110: "MI250X", 228: "MI300A", 304: "MI300X"}


def peak_of(name: str | None, properties: Mapping | None = None) -> tuple[Peak | None, str]:
    """The row for a device, and how it was found ("by name", "by compute units", or why it is unknown)."""
    if name:
        for pattern, row in PEAKS:
            if pattern.search(name):
                return row, "by name"
    props = properties or {}
    if props.get("warpSize") == 64 and props.get("numSms") in _AMD_BY_CUS:
        label = _AMD_BY_CUS[props["numSms"]]
        return next(r for p, r in PEAKS if p.search(label)), f"by compute units ({props['numSms']} CUs)"
    return None, f"unknown GPU {name!r}: no peak figures, achieved rates only" if name else "no deviceProperties"
