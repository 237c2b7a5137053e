"""Writes the fuzz seed corpus in tests/fuzz/seeds/: small exported models
that together use every part of the format the harnesses should reach
(the frozen files in tests/data/v1*/ are seeds too). Kept small, since each
execution of a harness loads and runs one.

    .venv/bin/python tests/fuzz/make_seeds.py [NAME ...]   (all, or the seeds named)

- embed_attn: int64 token ids into an embedding, attention (kernels),
  layer norm, gather by index: inputs the fuzzer turns into out-of-range ids.
- conv_cpu: conv, batch norm, pools, linear on the cpu backend (payload).
- conv_portable: the same on the portable kernels, with padding modes,
  dilation, groups, transposed convolution and upsampling.
- int_ops: integer and bool ops: argmax, index_select, scatter_add, cumsum,
  where, comparisons, casts float <-> int.
- half: float16 and bfloat16 arithmetic and a matmul.
- dyn_mlp: an MLP with a dynamic batch (format 1.3 size expressions).
- loop: torch.while_loop and torch.cond with state (format 1.2).
- quant_int8: tern.quantize "int8": quantize/dequantize around conv, add,
  pooling and linear (scales and zero points as op arguments; the cpu
  payload's QConv, QBinary and QPool).
- quant_dynamic: "int8-dynamic": choose_qparams and the .tensor overloads,
  per-channel int8 weights.
- quant_int4: "int4-weight": packed int4 groups of an embedding and a linear.
- bundle: dyn_mlp with two bundled self-tests (Program.self_tests: inputs,
  expected outputs and tolerances inline in the flatbuffer) at batch 2 and 5.
"""

import sys
from pathlib import Path

import torch
from torch import nn

import tern

OUT = Path(__file__).resolve().parent / "seeds"


class EmbedAttn(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(32, 16)
        self.attn = nn.MultiheadAttention(16, 2, batch_first=True)
        self.norm = nn.LayerNorm(16)

    def forward(self, ids, pos):
        x = self.emb(ids)
        a, _ = self.attn(x, x, x, need_weights=False)
        y = self.norm(x + a)
        return torch.gather(y, 1, pos.unsqueeze(-1).expand(-1, -1, 16)).sum(-1)


class ConvNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(3, 8, 3, stride=2, padding=1)
        self.bn = nn.BatchNorm2d(8)
        self.dw = nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.pw = nn.Conv2d(8, 16, 1)
        self.fc = nn.Linear(16, 5)

    def forward(self, x):
        x = torch.relu(self.bn(self.c1(x)))
        x = torch.nn.functional.max_pool2d(x + self.dw(x), 2)
        x = torch.nn.functional.hardswish(self.pw(x))
        return self.fc(torch.nn.functional.adaptive_avg_pool2d(x, 1).flatten(1)).softmax(-1)


class ConvPortable(nn.Module):
    def __init__(self):
        super().__init__()
        self.c1 = nn.Conv2d(2, 4, 3, padding=2, dilation=2, padding_mode="reflect")
        self.c2 = nn.Conv2d(4, 4, 3, groups=2, padding=1, padding_mode="circular")
        self.t = nn.ConvTranspose2d(4, 2, 3, stride=2, padding=1, output_padding=1)

    def forward(self, x):
        x = torch.nn.functional.gelu(self.c2(self.c1(x)))
        x = torch.nn.functional.avg_pool2d(x, 2, ceil_mode=True)
        x = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="bilinear")
        return self.t(x)


class IntOps(nn.Module):
    def forward(self, x, idx, mask):
        a = x.argmax(-1)
        s = torch.index_select(x, 0, idx)
        z = torch.zeros(4, 6).scatter_add(0, idx.unsqueeze(-1).expand(-1, 6) % 4, s)
        c = torch.cumsum(x.to(torch.int32), 1)
        w = torch.where(mask, x, -x)
        return a, z, c, (w > 0).sum(), (x * 100).to(torch.int64) // 7


class Half(nn.Module):
    def forward(self, a, b):
        h = (a.half() * 3 + 1).exp().clamp(max=60000)
        m = torch.matmul(b.to(torch.bfloat16), b.to(torch.bfloat16).t())
        return h.float().sum(0), m.float()


class DynMLP(nn.Module):
    def __init__(self):
        super().__init__()
        self.l1 = nn.Linear(8, 16)
        self.l2 = nn.Linear(16, 4)

    def forward(self, x):
        return self.l2(torch.tanh(self.l1(x))).log_softmax(-1)


class Loop(nn.Module):
    def __init__(self):
        super().__init__()
        self.register_buffer("count", torch.zeros(1))

    def forward(self, n, x):
        def cond(i, y):
            return i < n

        def body(i, y):
            return i + 1, y * 0.5 + 1

        _, y = torch._higher_order_ops.while_loop(cond, body, (torch.zeros((), dtype=torch.int64), x))
        self.count.add_(1)
        y = torch.cond(y.sum() > 0, lambda t: t + 1, lambda t: t - 1, (y,))
        return y + self.count


class QuantNet(nn.Module):
    def __init__(self):
        super().__init__()
        self.conv = nn.Conv2d(2, 4, 3, padding=1)
        self.pool = nn.MaxPool2d(2)
        self.fc = nn.Linear(4 * 4 * 4, 32)

    def forward(self, x):
        y = torch.relu(self.conv(x))
        return self.fc(self.pool(y + x.repeat(1, 2, 1, 1)).flatten(1))


class QuantEmbed(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(16, 32)
        self.fc = nn.Linear(32, 8)

    def forward(self, ids):
        return self.fc(self.emb(ids))


def quantized(model, args, scheme, g):
    calibration = [tuple(torch.randn(a.shape, generator=g) if a.is_floating_point() else a for a in args)
                   for _ in range(2)]
    return tern.quantize(model.eval(), args, calibration=calibration, scheme=scheme, progress=False)


def main():
    OUT.mkdir(exist_ok=True)
    g = torch.Generator().manual_seed(0)
    cases = {
        "embed_attn": (EmbedAttn(), (torch.randint(0, 32, (1, 6), generator=g), torch.randint(0, 6, (1, 3), generator=g)), {}),
        "conv_cpu": (ConvNet(), (torch.randn(1, 3, 16, 16, generator=g),), {}),
        "conv_portable": (ConvPortable(), (torch.randn(1, 2, 9, 9, generator=g),), {"partitioners": ()}),
        "int_ops": (IntOps(), (torch.randn(4, 6, generator=g), torch.tensor([3, 0, 2, 1]), torch.rand(4, 6, generator=g) > 0.5), {}),
        "half": (Half(), (torch.randn(3, 5, generator=g), torch.randn(4, 8, generator=g)), {}),
        "dyn_mlp": (DynMLP(), (torch.randn(3, 8, generator=g),),
                    {"dynamic_shapes": {"x": {0: torch.export.Dim("batch", min=1, max=16)}}}),
        "loop": (Loop(), (torch.tensor(3), torch.randn(2, 3, generator=g)), {}),
    }
    x, ids = torch.randn(1, 2, 8, 8, generator=g), torch.randint(0, 16, (1, 5), generator=g)
    cases["quant_int8"] = (quantized(QuantNet(), (x,), "int8", g), (x,), {})
    cases["quant_dynamic"] = (quantized(QuantEmbed(), (ids,), "int8-dynamic", g), (ids,), {})
    cases["quant_int4"] = (quantized(QuantEmbed(), (ids,), "int4-weight", g), (ids,), {})
    b = torch.Generator().manual_seed(1)  # its own: the seeds above keep their values
    cases["bundle"] = (DynMLP(), (torch.randn(3, 8, generator=b),),
                       {"dynamic_shapes": {"x": {0: torch.export.Dim("batch", min=1, max=16)}},
                        "bundle": [(torch.randn(2, 8, generator=b),), (torch.randn(5, 8, generator=b),)]})
    wanted = sys.argv[1:] or list(cases)  # `make_seeds.py quant_int8` rewrites that seed only
    unknown = sorted(set(wanted) - set(cases))
    if unknown:
        raise SystemExit(f"make_seeds.py: no seed named {', '.join(unknown)}; the seeds are {', '.join(cases)}")
    for name, (model, args, kwargs) in cases.items():
        if name not in wanted:
            continue
        if isinstance(model, nn.Module) and not isinstance(model, torch.fx.GraphModule):
            model.eval()
        prog = tern.export(model, args, **kwargs)
        path = OUT / f"{name}.tern"
        prog.save(str(path))
        print(f"{path.name}: {path.stat().st_size} bytes")


if __name__ == "__main__":
    main()
