"""Tiny Hugging Face models as the cpu backend's tests export them: each a
builder of (module, example inputs), the module returning the last hidden
state. Text models take token ids and a padding mask (the second sequence
6 tokens shorter); Whisper's encoder takes mel features.
"""

from __future__ import annotations

from typing import Any, Callable

import torch
from torch import nn

import transformers

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
