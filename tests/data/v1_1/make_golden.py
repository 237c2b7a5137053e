"""Writes the frozen format-1.1 files in this folder (run once, when 1.1 was
current; do NOT regenerate them for a newer format: the point is that the
runtime keeps reading files that old exporters wrote).

    .venv/bin/python tests/data/v1_1/make_golden.py [name ...]   # e.g. cpu_ops_v2

- attention.tern: kernels only: a multi-head attention block with layer norm
  and a residual (bmm, softmax, permute/view, addmm, layer norm).
- cpu_block.tern: a small conv net (stem, depthwise, residual block, pools,
  linear head) on the cpu backend (payload version 1): the backend's
  payload format frozen too.
- cpu_ops_v2.tern: the cpu backend's payload version 2 ops: scaled
  dot-product attention with a float mask, a grouped convolution, a channel
  concat written in place by two convolutions, a transposed convolution
  (phases and Interleave), a concat along a plain axis, a Winograd F(2x2,
  3x3) convolution (made at 16 channels, below the exporter's usual bar).
- cpu_chain.tern: inverted residual blocks whose convolutions run as row
  chains (cpu.fbs Conv.fuse_next; made with the exporter's size bar at 0):
  expand, depthwise and projection with a residual, and expand into a
  depthwise whose output also feeds a gate.
- cpu_qs8.tern: the cpu backend's payload version 3: a model quantized by
  tern.quantize("int8"): int8 convolutions (general with relu, depthwise
  with relu6, pointwise) and a linear layer as QConv ops, Quantize and
  Dequantize around a float residual add and pool, int8 transposes and
  copies. Its outputs are PyTorch's execution of the converted model, which
  this file matched exactly when it was written.
- cpu_qs8_ops.tern (added later, payload version 3): the int8 ops after
  QConv: QPool (a max pool with padding, an average pool, a mean over the
  image) and QBinary (add, mul), from tern.quantize("int8").
- cpu_qs8_dynamic.tern: tern.quantize("int8-dynamic"): DynamicQuantize and
  QLinear (two linear layers sharing one quantized input, and one after a
  float op).
- cpu_qs4_weight.tern: tern.quantize("int4-weight", group_size=32): WLinear
  of packed int4 weights in groups, and an embedding's quantized rows.
- cpu_winograd_v5.tern (added later, payload version 5): Winograd F(2x2,
  3x3) convolutions whose 16 GEMMs share the 3x3 kernel, transformed at load
  (cpu.fbs Conv.winograd_element): with bias and relu, without bias with a
  residual, and one without padding to an odd output size (made at 16
  channels and 16 pixels, below the exporter's usual bar).
- delegated.tern: elementwise chains handed to the "tern_test" backend
  (tests/cpp/test_backend.h, tests/python/tern_test_backend.py) around a
  linear layer and a convolution on kernels: two BackendCall delegates with
  constants moved into their payloads.

Inputs and PyTorch eager's outputs are kept beside each as .npy files.
"""

import sys
from pathlib import Path

import numpy as np
import torch

import tern
from tern.backends.cpu import CpuOptions, CpuPartitioner

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[1] / "python"))
from tern_test_backend import TestPartitioner  # noqa: E402


class Attention(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.attn = torch.nn.MultiheadAttention(16, 4, batch_first=True)
        self.ln = torch.nn.LayerNorm(16)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.ln(x + self.attn(x, x, x, need_weights=False)[0])


class Delegated(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.scale = torch.nn.Parameter(torch.rand(2, 4, 6, 6) + 0.5)
        self.conv = torch.nn.Conv2d(4, 4, 3, padding=1)

    def forward(self, x: torch.Tensor, y: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        a = torch.relu(x * self.scale - y)
        b = self.conv(a)
        return torch.relu(b + a) * y, a


class CpuBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(16, 16, 3, padding=1, groups=16)
        self.pw = torch.nn.Conv2d(16, 16, 1)
        self.fc = torch.nn.Linear(16, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.nn.functional.relu6(self.stem(x))
        y = torch.nn.functional.max_pool2d(torch.relu(self.pw(torch.nn.functional.hardswish(self.dw(y))) + y), 3, 2, 1)
        return self.fc(torch.flatten(torch.nn.functional.adaptive_avg_pool2d(y, 1), 1))


class CpuOpsV2(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b = torch.nn.Conv2d(4, 6, 1), torch.nn.Conv2d(4, 10, 3, padding=1)
        self.grouped = torch.nn.Conv2d(16, 16, 3, padding=1, groups=4)
        self.up = torch.nn.ConvTranspose2d(16, 8, 4, stride=2, padding=1)
        self.qkv = torch.nn.Linear(8, 24)
        self.wino = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.mask = torch.nn.Parameter(torch.randn(1, 1, 16, 16))
        self.token = torch.nn.Parameter(torch.randn(1, 1, 8))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.grouped(torch.cat([torch.relu(self.a(x)), torch.relu(self.b(x))], 1)))
        y = self.up(torch.relu(self.wino(y) + y)).flatten(2).transpose(1, 2)  # [1, 64, 8]
        q, k, v = self.qkv(y).reshape(1, 64, 2, 3, 4).permute(3, 0, 2, 1, 4)[:, :, :, :16]
        att = torch.nn.functional.scaled_dot_product_attention(q, k, v, self.mask)  # [1, 2, 16, 4]
        return torch.cat([self.token, att.transpose(1, 2).reshape(1, 16, 8)], 1)


class CpuWinogradV5(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a = torch.nn.Conv2d(16, 16, 3, padding=1)
        self.b = torch.nn.Conv2d(16, 16, 3, padding=1, bias=False)
        self.c = torch.nn.Conv2d(16, 24, 3)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = torch.relu(self.a(x))
        return self.c(torch.relu(self.b(y) + y))


class CpuChain(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.e1, self.d1, self.p1 = torch.nn.Conv2d(4, 12, 1), torch.nn.Conv2d(12, 12, 3, padding=1, groups=12), \
            torch.nn.Conv2d(12, 4, 1)
        self.e2, self.d2 = torch.nn.Conv2d(4, 20, 1), torch.nn.Conv2d(20, 20, 5, stride=2, padding=2, groups=20)
        self.gate = torch.nn.Conv2d(20, 20, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = self.p1(torch.nn.functional.relu6(self.d1(torch.nn.functional.relu6(self.e1(x))))) + x
        y = torch.nn.functional.hardswish(self.d2(torch.nn.functional.hardswish(self.e2(x))))
        return y * torch.sigmoid(self.gate(y.mean((2, 3), keepdim=True)))


class CpuQs8(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = torch.nn.Conv2d(8, 8, 1)
        self.head = torch.nn.Linear(8 * 4 * 4, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.relu(self.stem(x))
        x = self.pw(torch.nn.functional.relu6(self.dw(x))) + x
        return self.head(torch.nn.functional.max_pool2d(x, 2).flatten(1))


class CpuQs8Ops(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.stem = torch.nn.Conv2d(3, 16, 3, padding=1)
        self.gate = torch.nn.Conv2d(16, 16, 1)
        self.head = torch.nn.Linear(16, 5)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        x = torch.nn.functional.max_pool2d(torch.relu(self.stem(x)), 3, 2, 1)
        x = x * self.gate(x) + x
        x = torch.nn.functional.avg_pool2d(x, 2, 2)
        return self.head(x.mean((2, 3)))


class CpuQsDynamic(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.a, self.b, self.c = torch.nn.Linear(24, 40), torch.nn.Linear(24, 40), torch.nn.Linear(40, 7)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.c(torch.relu(self.a(x) + self.b(x)))


class CpuQs4Weight(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = torch.nn.Embedding(20, 64)
        self.fc = torch.nn.Linear(64, 96)
        self.out = torch.nn.Linear(96, 10)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(torch.relu(self.fc(self.emb(ids))))


def save(name: str, model: torch.nn.Module, args: tuple[torch.Tensor, ...], **export_args: object) -> None:
    if not isinstance(model, torch.fx.GraphModule):  # a quantized model is traced in eval mode already
        model.eval()
    tern.export(model, args, **export_args).save(HERE / f"{name}.tern")
    with torch.no_grad():
        outs = model(*args)
    for i, x in enumerate(args):
        np.save(HERE / f"{name}.input{i}.npy", x.numpy())
    for i, o in enumerate([outs] if isinstance(outs, torch.Tensor) else outs):
        np.save(HERE / f"{name}.output{i}.npy", o.numpy())


def main(names: list[str]) -> None:
    """Writes the files named (all when none): a file added later is written
    alone, so the others stay as their exporter wrote them."""
    names = names or ["attention", "delegated", "cpu_block", "cpu_ops_v2", "cpu_chain", "cpu_qs8", "cpu_qs8_ops",
                      "cpu_qs8_dynamic", "cpu_qs4_weight", "cpu_winograd_v5"]
    torch.manual_seed(0)
    if "attention" in names:
        save("attention", Attention(), (torch.randn(2, 5, 16),), partitioners=())
    if "delegated" in names:
        save("delegated", Delegated(), (torch.randn(2, 4, 6, 6), torch.randn(2, 4, 6, 6)),
             partitioners=[TestPartitioner()])
    torch.manual_seed(0)  # each added later, seeded on its own so the files above stay as they were
    if "cpu_block" in names:
        save("cpu_block", CpuBlock(), (torch.randn(1, 3, 20, 20),))
    torch.manual_seed(0)
    if "cpu_ops_v2" in names:
        options = CpuOptions(winograd_min_channels=16, winograd_min_pixels=16)
        save("cpu_ops_v2", CpuOpsV2(), (torch.randn(1, 4, 4, 4),), partitioners=[CpuPartitioner(options=options)])
    torch.manual_seed(0)
    if "cpu_chain" in names:
        options = CpuOptions(row_chain_min_bytes=0)
        save("cpu_chain", CpuChain(), (torch.randn(1, 4, 11, 10),), partitioners=[CpuPartitioner(options=options)])
    torch.manual_seed(0)
    if "cpu_qs8" in names:
        calibration = [(torch.randn(1, 3, 16, 16),) for _ in range(4)]
        qmodel = tern.quantize(CpuQs8().eval(), calibration[0], calibration=calibration, scheme="int8", progress=False)
        save("cpu_qs8", qmodel, (torch.randn(1, 3, 16, 16),))
    torch.manual_seed(0)
    if "cpu_qs8_ops" in names:
        calibration = [(torch.randn(1, 3, 12, 12),) for _ in range(4)]
        qmodel = tern.quantize(CpuQs8Ops().eval(), calibration[0], calibration=calibration, scheme="int8",
                               progress=False)
        save("cpu_qs8_ops", qmodel, (torch.randn(1, 3, 12, 12),))
    torch.manual_seed(0)
    if "cpu_qs8_dynamic" in names:
        args = (torch.randn(3, 24),)
        qmodel = tern.quantize(CpuQsDynamic().eval(), args, scheme="int8-dynamic", progress=False)
        save("cpu_qs8_dynamic", qmodel, (torch.randn(3, 24),))
    torch.manual_seed(0)
    if "cpu_qs4_weight" in names:
        args = (torch.randint(0, 20, (1, 6)),)
        qmodel = tern.quantize(CpuQs4Weight().eval(), args, scheme="int4-weight", group_size=32, progress=False)
        save("cpu_qs4_weight", qmodel, (torch.randint(0, 20, (1, 6)),))
    torch.manual_seed(0)
    if "cpu_winograd_v5" in names:
        options = CpuOptions(winograd_min_channels=16, winograd_min_pixels=16)
        save("cpu_winograd_v5", CpuWinogradV5(), (torch.randn(1, 16, 9, 8),),
             partitioners=[CpuPartitioner(options=options)])


if __name__ == "__main__":
    main(sys.argv[1:])
