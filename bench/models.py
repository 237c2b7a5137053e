"""The models of `make bench`: random weights from fixed seeds, batch 1.

    from models import MODELS, build
    module, inputs = build("resnet18")      # eval mode; inputs: a tuple of tensors

Every model is built the same way each time (seed 0 for the weights, seed 1
for the input), so every runtime, in every process, sees the same weights and
the same input. Needs torch (and torchvision for the vision models); the
ExecuTorch environment never imports this file (it loads the saved
torch.export program instead).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable

import torch
from torch import nn


@dataclass(frozen=True)
class ModelSpec:
    name: str
    description: str
    make: Callable[[], nn.Module]
    inputs: Callable[[], tuple[torch.Tensor, ...]]  # the bench input: what every runtime is timed on
    # A dynamic export: torch.export's dynamic_shapes (made fresh: a Dim is a
    # class), the example inputs the file is exported from (seed 1, like the
    # bench input), and the model of the static export at the bench input's
    # size that the report sets it beside.
    dynamic_shapes: Callable[[], object] | None = None
    export_inputs: Callable[[], tuple[torch.Tensor, ...]] | None = None
    static: str | None = None


def _image() -> tuple[torch.Tensor, ...]:
    return (torch.randn(1, 3, 224, 224),)


def _torchvision(name: str) -> Callable[[], nn.Module]:
    def make() -> nn.Module:
        import torchvision

        return getattr(torchvision.models, name)(weights=None)

    return make


def _redraw_layers(encoder: nn.TransformerEncoder) -> None:
    """nn.TransformerEncoder deep-copies one layer, so every layer starts with
    the same weights, which a runtime that stores identical constants once
    would store once: draw each layer's weights anew (their usual init)."""
    for layer in encoder.layers:
        for m in layer.modules():
            if isinstance(m, nn.MultiheadAttention):
                m._reset_parameters()
            elif isinstance(m, nn.Linear):
                m.reset_parameters()


class BertEncoder(nn.Module):
    """BERT-base-sized encoder over float embeddings: 12 post-norm layers,
    d_model 768, 12 heads, feed-forward 3072, GELU. x: [1, 128, 768]."""

    def __init__(self) -> None:
        super().__init__()
        layer = nn.TransformerEncoderLayer(768, 12, 3072, dropout=0.0, activation="gelu", batch_first=True)
        self.encoder = nn.TransformerEncoder(layer, num_layers=12, enable_nested_tensor=False)
        _redraw_layers(self.encoder)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.encoder(x)


class Decoder(nn.Module):
    """Decoder-only language model: token ids [1, 128] -> logits [1, 128, vocab].
    Token + learned position embeddings, 4 pre-norm layers 512 wide (8 heads,
    feed-forward 2048, GELU) under a causal mask, final norm, linear head."""

    def __init__(self, vocab: int = 8192, seq: int = 128, d: int = 512, layers: int = 4) -> None:
        super().__init__()
        self.tokens = nn.Embedding(vocab, d)
        self.positions = nn.Parameter(torch.randn(1, seq, d) * 0.02)
        layer = nn.TransformerEncoderLayer(d, 8, 4 * d, dropout=0.0, activation="gelu", batch_first=True,
                                           norm_first=True)
        self.layers = nn.TransformerEncoder(layer, num_layers=layers, enable_nested_tensor=False)
        _redraw_layers(self.layers)
        self.norm = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab)
        # A float mask (0 on and below the diagonal, -inf above): a constant
        # of the exported graph, the same for every runtime.
        self.register_buffer("causal", nn.Transformer.generate_square_subsequent_mask(seq))

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        h = self.tokens(ids) + self.positions
        # is_causal=True states what the mask is (else TransformerEncoder
        # compares it with a causal mask at run time: data-dependent, no export).
        h = self.layers(h, mask=self.causal, is_causal=True)
        return self.head(self.norm(h))


class GruAudio(nn.Module):
    """Audio frame classifier: 2-layer GRU (hidden 256) over 80-band mel
    frames [1, 100, 80], a linear head to 35 classes per frame."""

    def __init__(self) -> None:
        super().__init__()
        self.gru = nn.GRU(80, 256, num_layers=2, batch_first=True)
        self.head = nn.Linear(256, 35)

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        h, _ = self.gru(mel)
        return self.head(h)


class HuggingFace(nn.Module):
    """A Hugging Face model's last hidden state from token ids and a padding
    mask, without a cache (transformers, pinned in requirements.txt)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, ids: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
        kw = {"use_cache": False} if hasattr(self.model.config, "use_cache") else {}
        return self.model(input_ids=ids, attention_mask=mask, **kw).last_hidden_state


def _bert_minilm() -> nn.Module:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                     intermediate_size=1536)
    return HuggingFace(BertModel(cfg, add_pooling_layer=False))


def _llama_135m() -> nn.Module:
    from transformers import LlamaConfig, LlamaModel

    cfg = LlamaConfig(vocab_size=49152, hidden_size=576, num_hidden_layers=30, num_attention_heads=9,
                      num_key_value_heads=3, intermediate_size=1536, tie_word_embeddings=True)
    return HuggingFace(LlamaModel(cfg))


def _tokens(vocab: int, seq: int = 128, padded: int = 0) -> Callable[[], tuple[torch.Tensor, ...]]:
    def make() -> tuple[torch.Tensor, ...]:
        mask = torch.ones(1, seq, dtype=torch.long)
        mask[0, seq - padded:] = 0
        return torch.randint(0, vocab, (1, seq)), mask

    return make


def _dynamic_tokens() -> tuple[dict[int, object], dict[int, object]]:
    """Token ids and padding mask [1, seq], seq from 2 to 128 tokens."""
    seq = torch.export.Dim("seq", min=2, max=128)
    return {1: seq}, {1: seq}


_MINILM = "Hugging Face BertModel, MiniLM size (6 layers, d 384, 12 heads, ffn 1536)"
_DYNAMIC = "exported once with a dynamic sequence length (Dim seq, 2..128; example: bert_minilm's 128 tokens)"


def _minilm_dynamic(seq: int, padded: int, static: str) -> ModelSpec:
    return ModelSpec(f"bert_minilm_dyn_{seq}", f"{_MINILM}; {_DYNAMIC}, timed on token ids 1x{seq} and a padding "
                     f"mask ({padded} padded)", _bert_minilm, _tokens(30522, seq, padded),
                     dynamic_shapes=_dynamic_tokens, export_inputs=_tokens(30522, padded=28), static=static)


MODELS: dict[str, ModelSpec] = {
    s.name: s
    for s in [
        ModelSpec("mobilenet_v2", "torchvision, 1x3x224x224", _torchvision("mobilenet_v2"), _image),
        ModelSpec("mobilenet_v3_large", "torchvision, 1x3x224x224", _torchvision("mobilenet_v3_large"), _image),
        ModelSpec("resnet18", "torchvision, 1x3x224x224", _torchvision("resnet18"), _image),
        ModelSpec("resnet50", "torchvision, 1x3x224x224", _torchvision("resnet50"), _image),
        ModelSpec("efficientnet_b0", "torchvision, 1x3x224x224", _torchvision("efficientnet_b0"), _image),
        ModelSpec("vit_b_16", "torchvision, 1x3x224x224", _torchvision("vit_b_16"), _image),
        ModelSpec("bert_encoder", "12 layers, d 768, 12 heads, ffn 3072; float embeddings 1x128x768",
                  BertEncoder, lambda: (torch.randn(1, 128, 768),)),
        ModelSpec("decoder_4x512", "4 pre-norm layers, d 512, 8 heads, causal; token ids 1x128, vocab 8192",
                  Decoder, lambda: (torch.randint(0, 8192, (1, 128)),)),
        ModelSpec("gru_audio", "2-layer GRU, hidden 256, over mel 1x100x80; linear head to 35",
                  GruAudio, lambda: (torch.randn(1, 100, 80),)),
        ModelSpec("bert_minilm", f"{_MINILM}; token ids 1x128 and a padding mask (28 padded)", _bert_minilm,
                  _tokens(30522, padded=28)),
        # a quarter of the tokens, padded in the same proportion (7 of 32 as 28 of 128)
        ModelSpec("bert_minilm_32", f"{_MINILM}; token ids 1x32 and a padding mask (7 padded)", _bert_minilm,
                  _tokens(30522, 32, padded=7)),
        _minilm_dynamic(32, 7, static="bert_minilm_32"),
        _minilm_dynamic(128, 28, static="bert_minilm"),
        ModelSpec("llama_prefill", "Hugging Face LlamaModel, SmolLM2-135M's shape (30 layers, d 576, 9 heads, "
                  "3 kv heads, ffn 1536); a 128-token prefill without a cache", _llama_135m, _tokens(49152)),
    ]
}

QUICK = ["mobilenet_v2", "decoder_4x512"]


def build(name: str) -> tuple[nn.Module, tuple[torch.Tensor, ...]]:
    """The model (eval mode, weights from seed 0) and its input (seed 1)."""
    spec = MODELS[name]
    torch.manual_seed(0)
    module = spec.make().eval()
    torch.manual_seed(1)
    inputs = spec.inputs()
    _make_outputs_informative(module, inputs)
    return module, inputs


def export_args(name: str, inputs: tuple[torch.Tensor, ...]) -> tuple[tuple[torch.Tensor, ...], object]:
    """What a runtime's exporter is given: the example inputs (the bench
    input `inputs` but for a dynamic export, whose own come from seed 1 too)
    and torch.export's dynamic_shapes (None: every dim static)."""
    spec = MODELS[name]
    if spec.dynamic_shapes is None:
        return inputs, None
    torch.manual_seed(1)
    return (spec.export_inputs() if spec.export_inputs else inputs), spec.dynamic_shapes()


def float_weight_bytes(module: nn.Module) -> int:
    """The bytes of the model's float parameters and buffers, each tensor
    once (tied weights are one parameter): what a file holding the weights
    as they are cannot go below."""
    tensors = {id(t): t for t in [*module.parameters(), *module.buffers()] if t.is_floating_point()}
    return sum(t.numel() * t.element_size() for t in tensors.values())


def _make_outputs_informative(module: nn.Module, inputs: tuple[torch.Tensor, ...]) -> None:
    """Random-weight models can give outputs that say nothing about the layers
    before them, and then an output check passes whatever a runtime computed:
    torchvision initializes some heads to zero (ViT: every output is 0), and
    batch norms with fresh statistics let activations shrink layer by layer
    (random mobilenet_v2 outputs are ~1e-15). So: zero Linear weights are
    drawn from N(0, 0.02), and every batch norm's statistics are set from
    the bench input (one forward in train mode, cumulative average), which
    keeps activations near unit scale through the network."""
    torch.manual_seed(2)
    with torch.no_grad():
        for m in module.modules():
            if isinstance(m, nn.Linear) and not m.weight.any():
                m.weight.normal_(0.0, 0.02)
        norms = [m for m in module.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
        if not norms:
            return
        for m in norms:
            m.reset_running_stats()
            m.momentum = None  # cumulative average: after one batch, that batch's statistics
            m.train()
        module(*inputs)
        for m in norms:
            m.eval()


def build_empty(name: str) -> nn.Module:
    """The model's structure on the meta device (no weights), for loading a
    state dict into with assign=True; built on the CPU instead when it has
    buffers a state dict does not hold (non-persistent ones, computed at
    construction: Llama's rotary inv_freq)."""
    with torch.device("meta"):
        module = MODELS[name].make().eval()
    saved = set(module.state_dict())
    if all(n in saved for n, _ in module.named_buffers()):
        return module
    return MODELS[name].make().eval()
