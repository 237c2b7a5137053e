"""Writes the frozen format-v1 files in this folder (run once, when v1 was
current; do NOT regenerate them for a newer format: the point is that the
runtime keeps reading files that old exporters wrote).

    .venv/bin/python tests/data/v1/make_golden.py

kitchen_sink.tern covers most portable kernels in one small model with two
inputs (an image and token ids); inputs and PyTorch eager's outputs are kept
beside it as .npy files.
"""

from pathlib import Path

import numpy as np
import torch

import tern

HERE = Path(__file__).resolve().parent


class KitchenSink(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.conv = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.bn = torch.nn.BatchNorm2d(8)
        self.dw = torch.nn.Conv2d(8, 8, 3, padding=1, groups=8)
        self.fc_img = torch.nn.Linear(8 * 4 * 4, 16)
        self.emb = torch.nn.Embedding(20, 16)
        self.ln = torch.nn.LayerNorm(16)
        self.fc_tok = torch.nn.Linear(16, 16)
        self.head = torch.nn.Linear(32, 5)

    def forward(self, image: torch.Tensor, tokens: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x = torch.relu(self.bn(self.conv(image)))
        x = torch.nn.functional.max_pool2d(x, 2)
        x = torch.nn.functional.hardswish(self.dw(x))
        x = torch.nn.functional.avg_pool2d(x, 2).flatten(1)
        a = torch.sigmoid(self.fc_img(x))
        t = self.ln(self.emb(tokens))
        t = torch.nn.functional.gelu(self.fc_tok(t)).mean(dim=1)
        b = torch.tanh(t) * 2.0 - 0.5
        h = torch.cat([a, b], dim=1)
        logits = self.head(h)
        return torch.log_softmax(logits, dim=-1), torch.where(logits > 0, logits, torch.zeros_like(logits))


def main() -> None:
    torch.manual_seed(0)
    model = KitchenSink().eval()
    with torch.no_grad():
        model.bn.running_mean.uniform_(-0.2, 0.2)
        model.bn.running_var.uniform_(0.5, 1.5)
    image = torch.randn(1, 3, 16, 16)
    tokens = torch.tensor([[1, 5, 19, 0, 7, 3]])
    tern.export(model, (image, tokens)).save(HERE / "kitchen_sink.tern")
    with torch.no_grad():
        outs = model(image, tokens)
    np.save(HERE / "kitchen_sink.input0.npy", image.numpy())
    np.save(HERE / "kitchen_sink.input1.npy", tokens.numpy())
    for i, o in enumerate(outs):
        np.save(HERE / f"kitchen_sink.output{i}.npy", o.numpy())


if __name__ == "__main__":
    main()
