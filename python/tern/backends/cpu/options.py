"""What the cpu backend's exporter decides by measurement rather than by
rule, in one object given to the partitioner:

    from tern.backends.cpu import CpuOptions, CpuPartitioner
    cpu = CpuPartitioner(options=CpuOptions(row_chain_min_bytes=0))
    program = tern.export(model, (x,), partitioners=[cpu])

The defaults are the measured ones below; tests and benchmarks change them
per export, never module-wide.
"""
from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class CpuOptions:
    # Winograd F(2x2, 3x3) for 3x3 stride-1 convolutions of at least
    # winograd_min_pixels output pixels and winograd_min_channels input and
    # output channels. Measured (2026-12-01, AVX-512, 1 thread, four 3x3
    # convolutions in a row, Winograd / direct time): 64 channels at 56x56
    # 1.01, 128 at 28x28 0.77, 256 at 14x14 0.66, 512 at 7x7 0.80: with
    # fewer channels the 16 GEMMs' short k and the transforms eat the 2.25x
    # fewer multiply-adds. Below 64 pixels (7x7), what a run saves does not
    # pay for the transform at load (winograd_expanded_weights below): its
    # cost grows with the kernel's bytes, the saving with the pixels, and the
    # 7x7 layers hold most of the bytes (resnet18: 7.1 M of its 9.3 M
    # Winograd weights). Measured 2026-12-07 (AVX-512, 1 thread, each load
    # right after an export, as in a benchmark): with 7x7 Winograd,
    # resnet18 loads in 29 to 99 ms (66 MB of fresh memory to fault in and
    # fill) and runs in 26.6 ms; without, in 9.4 to 11.8 ms and 29.0 ms.
    winograd: bool = True
    winograd_min_pixels: int = 64
    winograd_min_channels: int = 128
    # Where a Winograd convolution's weights are transformed. False (the
    # default): the file holds the 3x3 kernel and the runtime computes
    # G g G^T and packs it at load (cpu.fbs Conv.winograd_element, payload
    # version 5), so the file is no bigger than the weights. True: the file
    # holds G g G^T already packed, 16/9 the kernel's bytes (resnet18: 75.9 MB
    # instead of 46.8 MB), used in place: no work at load (measured
    # 2026-12-07, resnet18, 1 thread: the transform takes load from 0.3 ms
    # to 27 ms; steady latency the same).
    winograd_expanded_weights: bool = False
    # Row chains (cpu.fbs Conv.fuse_next): a pointwise convolution, the
    # depthwise one that alone reads its output and, where it alone reads the
    # depthwise output, the pointwise projection after it (an inverted
    # residual block) run output row by output row, so the wide tensors
    # between them stay in cache. Only where the expanded tensor is at least
    # row_chain_min_bytes: smaller ones stay in cache anyway, and each thread
    # recomputes the rows its first output row needs (about (k - stride)
    # rows a thread).
    row_chains: bool = True
    row_chain_min_bytes: int = 1 << 20
    # Linear layers over GGUF weights (tern.llm: F.linear(x, tern::gguf_dequantize(rows, fmt, k)) with rows a
    # constant in Q4_0, Q4_1 or Q8_0) as one BlockLinear: the file keeps the rows as they are, read in place,
    # and x is quantized at each call to int8 blocks of 32 (llama.cpp's way; backends/cpu/ukernels/qb.h), so
    # the outputs differ from eager's by that quantization (about 1e-2 relative). False: the weight is
    # dequantized at each call by the portable kernel and the float linear layer runs on it, as eager
    # computes it (the mode for bit-faithful comparisons with eager).
    block_linear: bool = True
