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
from typing import Any, Callable

import pytest
import torch
from torch import nn

import tern
from compare import assert_close
from tern.backends.cpu import CpuPartitioner
from tern.inspect import read_program

transformers = pytest.importorskip("transformers", reason="transformers not installed (requirements.txt)")

VOCAB, SEQ = 300, 19


class Hidden(nn.Module):
    """The model's last hidden state, without a cache."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, *args: torch.Tensor) -> torch.Tensor:
        kw: dict[str, Any] = {"use_cache": False} if hasattr(self.model.config, "use_cache") else {}
        if len(args) == 2:
            kw["attention_mask"] = args[1]
        key = "input_features" if isinstance(self.model, transformers.WhisperPreTrainedModel) else "input_ids"
        return self.model(**{key: args[0]}, **kw).last_hidden_state


def _text(cfg: Callable[[], Any], model: Callable[[Any], nn.Module]) -> Callable[[], tuple[nn.Module, tuple]]:
    def build() -> tuple[nn.Module, tuple]:
        ids = torch.randint(0, VOCAB, (2, SEQ), generator=torch.Generator().manual_seed(1))
        mask = torch.ones(2, SEQ, dtype=torch.long)
        mask[1, SEQ - 6:] = 0  # the second sequence is 6 tokens shorter: padding
        return Hidden(model(cfg())), (ids, mask)

    return build


T = transformers
SMALL = {"vocab_size": VOCAB}
MODELS = {
    "bert": _text(lambda: T.BertConfig(**SMALL, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                       intermediate_size=128),
                  lambda c: T.BertModel(c, add_pooling_layer=False)),
    "distilbert": _text(lambda: T.DistilBertConfig(**SMALL, dim=64, n_layers=2, n_heads=4, hidden_dim=128),
                        T.DistilBertModel),
    "roberta": _text(lambda: T.RobertaConfig(**SMALL, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                             intermediate_size=128),
                     lambda c: T.RobertaModel(c, add_pooling_layer=False)),
    "t5_encoder": _text(lambda: T.T5Config(**SMALL, d_model=64, num_layers=2, num_heads=4, d_ff=128, d_kv=16),
                        T.T5EncoderModel),
    "llama": _text(lambda: T.LlamaConfig(**SMALL, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, intermediate_size=128),
                   T.LlamaModel),
    "qwen2": _text(lambda: T.Qwen2Config(**SMALL, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         num_key_value_heads=2, intermediate_size=128),
                   T.Qwen2Model),
    "whisper_encoder": lambda: (Hidden(T.WhisperModel(T.WhisperConfig(
        d_model=64, encoder_layers=2, decoder_layers=1, encoder_attention_heads=4, decoder_attention_heads=4,
        num_mel_bins=16, max_source_positions=20)).encoder),
        (torch.randn(1, 16, 40, generator=torch.Generator().manual_seed(1)),)),
}


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
