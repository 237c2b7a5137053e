"""The attention of Hugging Face models as they export it, on the cpu
backend's Attention op (issue 26, item 1), with the rotary embeddings'
negation around it: a tokenizer's padding mask (a
bool mask computed at run time, broadcast over heads and queries), causal
with padding (Llama, Qwen2: grouped-query heads), T5's relative position
bias (a float mask), Whisper's encoder (no mask). Tiny configs with static
shapes; the oracle is the same module in eager PyTorch on the same inputs.
"""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

import tern
from compare import assert_close
from tern.backends.cpu import CpuPartitioner
from tern.inspect import read_program

pytest.importorskip("transformers", reason="transformers not installed (requirements.txt)")
from hf_models import MODELS  # noqa: E402


@pytest.mark.parametrize("name", sorted(MODELS))
def test_every_attention_of_the_model_runs_on_the_cpu_backend(name: str, tmp_path: Path) -> None:
    torch.manual_seed(0)
    model, args = MODELS[name]()
    model.eval()
    cpu = CpuPartitioner()
    program = tern.export(model, args, partitioners=[cpu])
    operators = read_program(program.data)["methods"][0]["operators"]
    assert "aten::scaled_dot_product_attention" not in operators, cpu.report()
    assert "aten::neg" not in operators, cpu.report()  # rotary embeddings' rotate_half (Llama, Qwen2)
    # the layers are one subgraph: embeddings and the mask's making (bool ops) stay portable before it,
    # k and v repeated per head (Llama, Qwen2: repeat_kv) read past by the Attention op
    assert len(read_program(program.data)["methods"][0]["delegates"]) == 1, cpu.report()
    path = tmp_path / f"{name}.tern"
    program.save(path)
    with torch.no_grad():
        want = model(*args)
    got = tern.load(str(path))(*args)[0]
    assert_close(got, want, rtol=1e-4)
