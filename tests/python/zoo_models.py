"""The model zoo: real architectures built with fixed-seed random weights.

Each entry builds (model, example inputs, dynamic_shapes, inputs to run). The
test (tests/python/test_zoo.py) and the report (scripts/zoo_doc.py, which
writes docs/models.md) both read ZOO from here.

Weights are torch's default initialization under a fixed seed. A fresh batch
norm is an identity (mean 0, variance 1), which hides any error in its
folding and leaves activations with no real scale; so every model's batch
norms first measure their statistics on random inputs (a few forward passes
in train mode, momentum None: the plain average), then the model is put in
eval mode.

Inputs are small to keep the zoo within its time: 64x64 images, batch 1
(every classifier pools adaptively before its head; vit_b_16 is built with
image_size=64, 16 patches of 16x16; swin_t pads its windows; the
segmentation models upsample back to 64x64); ssdlite at 160x160 (feature
maps 10x10, 5x5, 3x3, 2x2, 1x1, 1x1: 840 anchors). Text models: tiny
configs (2 layers, hidden 32, 4 heads, vocabulary 100) with a dynamic
sequence length 2..32, run at SEQ_RUNS in one loaded method.
"""
from __future__ import annotations

import contextlib
import dataclasses
import time
from pathlib import Path
from typing import Any, Callable, Iterator

import torch
from torch import nn

from compare import scaled_error

IMAGE = 64  # image side for the classifiers (every one of them pools adaptively to its head)
CALIBRATION_PASSES = 3


@dataclasses.dataclass
class Case:
    model: nn.Module
    args: tuple[Any, ...]  # example inputs for tern.export
    runs: list[tuple[Any, ...]]  # inputs to run through one loaded method, each against eager
    dynamic_shapes: Any = None


@dataclasses.dataclass(frozen=True)
class Entry:
    name: str
    build: Callable[[], Case]


def calibrate_batch_norm(model: nn.Module, make_input: Callable[[torch.Generator], tuple[Any, ...]],
                         passes: int = CALIBRATION_PASSES) -> nn.Module:
    """Measures every batch norm's running statistics on random inputs (train
    mode, cumulative average), then returns the model in eval mode."""
    bns = [m for m in model.modules() if isinstance(m, nn.modules.batchnorm._BatchNorm)]
    if bns:
        for m in bns:
            m.reset_running_stats()
            m.momentum = None  # the plain average over the passes
        g = torch.Generator().manual_seed(1)
        model.train()
        with torch.no_grad():
            for _ in range(passes):
                model(*make_input(g))
    return model.eval()


def _reset_zero_weights(model: nn.Module) -> None:
    """Gives a layer initialized to zeros (torchvision's ViT head) its default
    random initialization: a zero layer outputs zeros whatever came before it."""
    for m in model.modules():
        w = getattr(m, "weight", None)
        if isinstance(w, torch.Tensor) and w.numel() > 1 and not w.any() and hasattr(m, "reset_parameters"):
            m.reset_parameters()


def _image(size: int = IMAGE, batch: int = 1) -> Callable[[torch.Generator], tuple[torch.Tensor]]:
    return lambda g: (torch.randn(batch, 3, size, size, generator=g),)


def _vision(ctor: Callable[[], nn.Module], size: int = IMAGE, wrap: Callable[[nn.Module], nn.Module] | None = None,
            calib_batch: int = 4) -> Callable[[], Case]:
    def build() -> Case:
        torch.manual_seed(0)
        model = ctor()
        if wrap is not None:
            model = wrap(model)
        _reset_zero_weights(model)
        calibrate_batch_norm(model, _image(size, calib_batch))
        x = torch.randn(1, 3, size, size, generator=torch.Generator().manual_seed(3))
        return Case(model, (x,), [(x,)])

    return build


class _Out(nn.Module):
    """A segmentation model's "out" tensor (torchvision returns a dict)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.model = model

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.model(x)["out"]


class _SsdBackboneHead(nn.Module):
    """SSDlite's backbone and head: box regressions and class logits for every
    anchor (the anchors, box decoding and NMS after them are not part of it)."""

    def __init__(self, model: nn.Module) -> None:
        super().__init__()
        self.backbone, self.head = model.backbone, model.head

    def forward(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        out = self.head(list(self.backbone(x).values()))
        return out["bbox_regression"], out["cls_logits"]


def _tv(name: str, **kw: Any) -> Callable[[], nn.Module]:
    import torchvision

    def ctor() -> nn.Module:
        return getattr(torchvision.models, name)(weights=None, **kw)

    return ctor


def _tv_seg(name: str) -> Callable[[], nn.Module]:
    import torchvision

    def ctor() -> nn.Module:
        return getattr(torchvision.models.segmentation, name)(weights=None, weights_backbone=None, num_classes=21)

    return ctor


def _ssdlite() -> nn.Module:
    import torchvision

    return torchvision.models.detection.ssdlite320_mobilenet_v3_large(weights=None, weights_backbone=None)


# --- recurrent ---------------------------------------------------------------

class _Recurrent(nn.Module):
    """A 2-layer recurrent encoder over a sequence, then a linear head on every step."""

    def __init__(self, cell: type[nn.Module]) -> None:
        super().__init__()
        self.rnn = cell(16, 32, num_layers=2, batch_first=True)
        self.head = nn.Linear(32, 8)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        y = self.rnn(x)[0]
        return self.head(y)


def _recurrent(cell: type[nn.Module]) -> Callable[[], Case]:
    def build() -> Case:
        torch.manual_seed(0)
        model = _Recurrent(cell).eval()
        x = torch.randn(2, 12, 16, generator=torch.Generator().manual_seed(3))
        return Case(model, (x,), [(x,)])

    return build


# --- U-Net with transposed convolutions -------------------------------------

def _double_conv(cin: int, cout: int) -> nn.Module:
    return nn.Sequential(nn.Conv2d(cin, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU(),
                         nn.Conv2d(cout, cout, 3, padding=1, bias=False), nn.BatchNorm2d(cout), nn.ReLU())


class UNet(nn.Module):
    """A 3-level U-Net (Ronneberger et al.): max-pool down, 2x2 stride-2
    transposed convolutions up, skip connections by concatenation."""

    def __init__(self, cin: int = 3, classes: int = 4, width: int = 16) -> None:
        super().__init__()
        w = width
        self.down = nn.ModuleList([_double_conv(cin, w), _double_conv(w, 2 * w), _double_conv(2 * w, 4 * w)])
        self.mid = _double_conv(4 * w, 8 * w)
        self.up = nn.ModuleList([nn.ConvTranspose2d(8 * w, 4 * w, 2, stride=2),
                                 nn.ConvTranspose2d(4 * w, 2 * w, 2, stride=2),
                                 nn.ConvTranspose2d(2 * w, w, 2, stride=2)])
        self.dec = nn.ModuleList([_double_conv(8 * w, 4 * w), _double_conv(4 * w, 2 * w), _double_conv(2 * w, w)])
        self.out = nn.Conv2d(w, classes, 1)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        skips = []
        for d in self.down:
            x = d(x)
            skips.append(x)
            x = nn.functional.max_pool2d(x, 2)
        x = self.mid(x)
        for up, dec, skip in zip(self.up, self.dec, reversed(skips)):
            x = dec(torch.cat([up(x), skip], dim=1))
        return self.out(x)


def _unet() -> Case:
    torch.manual_seed(0)
    model = calibrate_batch_norm(UNet(), _image(IMAGE, 2))
    x = torch.randn(1, 3, IMAGE, IMAGE, generator=torch.Generator().manual_seed(3))
    return Case(model, (x,), [(x,)])


# --- audio: a log-magnitude spectrogram (torch.stft) and a small CNN ---------

class SpectrogramCNN(nn.Module):
    """Waveform -> |STFT| (Hann window, 256-point, hop 64) -> log1p -> a small
    2-d CNN -> class logits: a keyword-spotting style audio classifier."""

    def __init__(self, n_fft: int = 256, hop: int = 64, classes: int = 10) -> None:
        super().__init__()
        self.n_fft, self.hop = n_fft, hop
        self.register_buffer("window", torch.hann_window(n_fft))
        self.net = nn.Sequential(nn.Conv2d(1, 16, 3, stride=2, padding=1), nn.BatchNorm2d(16), nn.ReLU(),
                                 nn.Conv2d(16, 32, 3, stride=2, padding=1), nn.BatchNorm2d(32), nn.ReLU(),
                                 nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(32, classes))

    def forward(self, wave: torch.Tensor) -> torch.Tensor:
        spec = torch.stft(wave, self.n_fft, self.hop, window=self.window, center=True, return_complex=True)
        return self.net(torch.log1p(spec.abs()).unsqueeze(1))


def _audio() -> Case:
    torch.manual_seed(0)
    model = calibrate_batch_norm(SpectrogramCNN(), lambda g: (torch.randn(2, 4000, generator=g),))
    x = torch.randn(1, 4000, generator=torch.Generator().manual_seed(3))
    return Case(model, (x,), [(x,)])


# --- Hugging Face transformers, tiny configs, dynamic sequence length --------

SEQ_MIN, SEQ_MAX = 2, 32
SEQ_RUNS = (5, 32, 2, 17)  # up and down within one loaded method


class _LastHidden(nn.Module):
    """The model's last hidden state (or logits) as one tensor."""

    def __init__(self, model: nn.Module, key: str) -> None:
        super().__init__()
        self.model, self.key = model, key

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return getattr(self.model(ids), self.key)


def _text(make: Callable[[], nn.Module], key: str, vocab: int) -> Callable[[], Case]:
    def build() -> Case:
        torch.manual_seed(0)
        model = _LastHidden(make(), key).eval()
        g = torch.Generator().manual_seed(3)
        ids = torch.randint(0, vocab, (1, SEQ_MAX), generator=g)
        seq = torch.export.Dim("seq", min=SEQ_MIN, max=SEQ_MAX)
        runs = [(ids[:, :n].contiguous(),) for n in SEQ_RUNS]
        return Case(model, (ids[:, :8].contiguous(),), runs, {"ids": {1: seq}})

    return build


VOCAB = 100


def _bert() -> nn.Module:
    from transformers import BertConfig, BertModel

    cfg = BertConfig(vocab_size=VOCAB, hidden_size=32, num_hidden_layers=2, num_attention_heads=4,
                     intermediate_size=64, max_position_embeddings=64, attn_implementation="sdpa")
    return BertModel(cfg, add_pooling_layer=False)


def _gpt2() -> nn.Module:
    from transformers import GPT2Config, GPT2LMHeadModel

    cfg = GPT2Config(vocab_size=VOCAB, n_embd=32, n_layer=2, n_head=4, n_positions=64, use_cache=False,
                     bos_token_id=0, eos_token_id=0, attn_implementation="sdpa")
    return GPT2LMHeadModel(cfg)


def _llama() -> nn.Module:
    from transformers import LlamaConfig, LlamaForCausalLM

    cfg = LlamaConfig(vocab_size=VOCAB, hidden_size=32, intermediate_size=64, num_hidden_layers=2,
                      num_attention_heads=4, num_key_value_heads=2, max_position_embeddings=64, use_cache=False,
                      attn_implementation="sdpa")
    return LlamaForCausalLM(cfg)


class WhisperEncoderFrames(nn.Module):
    """Whisper's encoder on log-mel frames of any length up to its maximum.

    transformers' WhisperEncoder.forward refuses any input but exactly
    2 * max_source_positions frames (30 s of audio); this runs the same
    submodules (conv stem, sinusoidal positions cut to the length, the encoder
    layers, the final layer norm) on a shorter input, as Whisper streaming
    ports do."""

    def __init__(self, encoder: nn.Module) -> None:
        super().__init__()
        self.encoder = encoder

    def forward(self, mel: torch.Tensor) -> torch.Tensor:
        e = self.encoder
        mel = mel.flatten(2)  # (batch, mels, pos, 2) -> (batch, mels, 2 * pos)
        x = nn.functional.gelu(e.conv1(mel))
        x = nn.functional.gelu(e.conv2(x)).permute(0, 2, 1)
        x = x + e.embed_positions.weight[: x.shape[1]]
        for layer in e.layers:
            x = layer(x, attention_mask=None)
            x = x[0] if isinstance(x, tuple) else x
        return e.layer_norm(x)


def _whisper() -> Case:
    from transformers import WhisperConfig, WhisperModel

    torch.manual_seed(0)
    cfg = WhisperConfig(vocab_size=VOCAB, num_mel_bins=16, d_model=32, encoder_layers=2, encoder_attention_heads=4,
                        decoder_layers=1, decoder_attention_heads=4, encoder_ffn_dim=64, decoder_ffn_dim=64,
                        max_source_positions=32, max_target_positions=32, pad_token_id=0, bos_token_id=1,
                        eos_token_id=1, decoder_start_token_id=2, attn_implementation="sdpa")
    model = WhisperEncoderFrames(WhisperModel(cfg).get_encoder()).eval()
    mel = torch.randn(1, 16, 2 * SEQ_MAX, generator=torch.Generator().manual_seed(3))
    # The frame count must be even (torch.export proves it from the encoder's
    # reshapes and asks for frames = 2 * pos), and the runtime binds each Dim
    # to an input dim's size, not to a multiple of one (tern.export refuses
    # the derived Dim 2 * pos alone). So the input is the frames in pairs,
    # (1, mels, pos, 2), pos in SEQ_MIN..SEQ_MAX: the same values, with the
    # even length in the shape.
    pos = torch.export.Dim("pos", min=SEQ_MIN, max=SEQ_MAX)
    runs = [(_pairs(mel[:, :, : 2 * n]),) for n in SEQ_RUNS]
    return Case(model, (_pairs(mel[:, :, :16]),), runs, {"mel": {2: pos}})


def _pairs(mel: torch.Tensor) -> torch.Tensor:
    return mel.reshape(mel.shape[0], mel.shape[1], -1, 2).contiguous()


ZOO: tuple[Entry, ...] = (
    Entry("mobilenet_v2", _vision(_tv("mobilenet_v2"))),
    Entry("mobilenet_v3_small", _vision(_tv("mobilenet_v3_small"))),
    Entry("mobilenet_v3_large", _vision(_tv("mobilenet_v3_large"))),
    Entry("resnet18", _vision(_tv("resnet18"))),
    Entry("resnet50", _vision(_tv("resnet50"))),
    Entry("efficientnet_b0", _vision(_tv("efficientnet_b0"))),
    Entry("squeezenet1_1", _vision(_tv("squeezenet1_1"))),
    Entry("shufflenet_v2_x1_0", _vision(_tv("shufflenet_v2_x1_0"))),
    Entry("regnet_y_400mf", _vision(_tv("regnet_y_400mf"))),
    # layer_scale: torchvision's default 1e-6 scales each block's output to nothing
    # (trained weights grow it); 1.0 keeps every block visible in the output.
    Entry("convnext_tiny", _vision(_tv("convnext_tiny", layer_scale=1.0))),
    Entry("vit_b_16", _vision(_tv("vit_b_16", image_size=64))),
    Entry("swin_t", _vision(_tv("swin_t"))),
    Entry("lraspp_mobilenet_v3_large", _vision(_tv_seg("lraspp_mobilenet_v3_large"), wrap=_Out)),
    Entry("deeplabv3_mobilenet_v3_large", _vision(_tv_seg("deeplabv3_mobilenet_v3_large"), wrap=_Out)),
    Entry("ssdlite320_mobilenet_v3_large", _vision(_ssdlite, size=160, wrap=_SsdBackboneHead)),
    Entry("bert", _text(_bert, "last_hidden_state", VOCAB)),
    Entry("gpt2", _text(_gpt2, "logits", VOCAB)),
    Entry("llama", _text(_llama, "logits", VOCAB)),
    Entry("whisper_encoder", _whisper),
    Entry("gru", _recurrent(nn.GRU)),
    Entry("lstm", _recurrent(nn.LSTM)),
    Entry("unet", _unet),
    Entry("stft_audio", _audio),
)


@dataclasses.dataclass
class Result:
    max_error: float  # max over runs and outputs of max |tern - eager| / max |eager| (compare.scaled_error)
    file_bytes: int
    planned_bytes: int
    export_s: float  # tern.export (torch.export, passes, packing, the load check) and save
    run_s: float  # the first run of the loaded method (all runs for dynamic shapes: per run)
    runs: int


@contextlib.contextmanager
def torch_threads(n: int) -> Iterator[None]:
    """Runs the block with torch on `n` intra-op threads, then restores the count.

    Eager on one thread: on a machine shared with other jobs, torch's OpenMP
    threads spin-wait for each other (a batch-norm calibration of
    mobilenet_v3_large took 14 s on 2 threads, 0.2 s on 1)."""
    before = torch.get_num_threads()
    torch.set_num_threads(n)
    try:
        yield
    finally:
        torch.set_num_threads(before)


def run_entry(entry: Entry, folder: Path, threads: int = 1) -> Result:
    """Builds, exports, saves, loads and runs one model (tern and eager on
    `threads` threads); compares every run with eager. Raises what export or
    the runtime raises."""
    with torch_threads(threads):
        return _run_entry(entry, folder, threads)


def _run_entry(entry: Entry, folder: Path, threads: int) -> Result:
    import tern

    case = entry.build()
    t0 = time.perf_counter()
    program = tern.export(case.model, case.args, dynamic_shapes=case.dynamic_shapes)
    path = folder / f"{entry.name}.tern"
    program.save(path)
    export_s = time.perf_counter() - t0
    method = tern.load(str(path), threads=threads)
    errs, run_s = [0.0], 0.0
    for inputs in case.runs:
        with torch.no_grad():
            ref = case.model(*inputs)
        refs = list(ref) if isinstance(ref, (tuple, list)) else [ref]
        t0 = time.perf_counter()
        outs = method(*inputs)
        run_s += time.perf_counter() - t0
        assert len(outs) == len(refs), f"{len(outs)} outputs, eager has {len(refs)}"
        for i, (got, want) in enumerate(zip(outs, refs)):
            # max |tern - eager| / max |eager| over finite values; raises
            # AssertionError (the model's failure, not a figure) on a shape,
            # dtype, NaN or infinity where eager has none.
            try:
                errs.append(scaled_error(got, want))
            except AssertionError as e:
                raise AssertionError(f"output {i}: {e}") from e
    return Result(max(errs), path.stat().st_size, program.planned_bytes, export_s, run_s / len(case.runs),
                  len(case.runs))
