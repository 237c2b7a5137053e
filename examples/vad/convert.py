"""Voice activity detection (issue 25): Silero VAD v6 (16 kHz) to out/vad.tern.

    python examples/vad/convert.py [--out out/vad.tern] [--check WAV ...]

The PyPI wheel `silero-vad` 6.2.3 defines the model in its own code twice:
as TorchScript (silero_vad/data/silero_vad.jit, what `load_silero_vad()`
returns and `get_speech_timestamps` runs) and as a tinygrad module
(silero_vad/tinygrad_model.py, which loads silero_vad_16k.safetensors from
the same wheel). `SileroVAD` below is that module written in PyTorch. The
safetensors file holds the same STFT basis but other values for every other
weight (conv1's differ by up to 4.0, the LSTM's by up to 1.0): another
training of the same architecture, whose probabilities differ from the
TorchScript model's by up to 0.59 on the test audio. So the weights are taken
from the TorchScript model, the package's reference (`--weights safetensors`
exports the other file); with them the module equals the package's model
exactly, chunk by chunk with its state carried (`--check`).

One call of the exported "forward" takes one chunk of CHUNK samples
(float32, [1, 512], 32 ms at 16 kHz, int16 / 32768) and returns the speech
probability ([1, 1]). The state the model carries between chunks stays in
the loaded method (registered buffers the forward mutates; format 1.2):

    h, c     [1, 128]  the LSTM cell's hidden and cell state
    context  [1, 64]   the last CONTEXT samples of the previous chunk, which
                       the package prepends to each chunk (zeros at the start)

`Method::reset_state()` (Python: `m.reset()`) restores zeros, as the
package's `reset_states()` does at the start of `get_speech_timestamps`.

Metadata "vad.settings" (key=value lines) holds what the C++ program
(examples/vad/main.cpp) needs: the sample rate, chunk and context sizes,
and get_speech_timestamps' default thresholds and durations.
"""

from __future__ import annotations

import argparse
import os
import sys
import wave

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 16000
CHUNK = 512      # samples per call (the package accepts only 512 at 16 kHz)
CONTEXT = 64     # samples of the previous chunk prepended to each chunk
HIDDEN = 128

# get_speech_timestamps' defaults (silero_vad/utils_vad.py, 6.2.3):
# neg_threshold = max(threshold - 0.15, 0.01).
TIMESTAMPS = {
    "threshold": 0.5,
    "neg_threshold": 0.35,
    "min_speech_duration_ms": 250,
    "min_silence_duration_ms": 100,
    "speech_pad_ms": 30,
}


def settings_text(**overrides: float) -> str:
    """vad.settings: what main.cpp reads (one key=value a line); overrides:
    other values of TIMESTAMPS' keys (the tests)."""
    lines = [f"sample_rate={SAMPLE_RATE}", f"chunk={CHUNK}", f"context={CONTEXT}"]
    lines += [f"{k}={v:g}" for k, v in {**TIMESTAMPS, **overrides}.items()]
    return "\n".join(lines) + "\n"


class SileroVAD(nn.Module):
    """Silero VAD's 16 kHz model (tinygrad_model.py) in PyTorch, streaming.

    forward(chunk [1, CHUNK]) -> probability [1, 1]; updates h, c, context.
    """

    def __init__(self) -> None:
        super().__init__()
        # STFT as a convolution: 129 real and 129 imaginary filters of 256
        # taps, hop 128, after a reflect pad of 64 on the right.
        self.stft_conv = nn.Conv1d(1, 258, kernel_size=256, stride=128, bias=False)
        self.conv1 = nn.Conv1d(129, 128, 3, padding=1)
        self.conv2 = nn.Conv1d(128, 64, 3, stride=2, padding=1)
        self.conv3 = nn.Conv1d(64, 64, 3, stride=2, padding=1)
        self.conv4 = nn.Conv1d(64, 128, 3, padding=1)
        self.lstm_cell = nn.LSTMCell(128, HIDDEN)
        self.final_conv = nn.Conv1d(128, 1, 1)
        self.register_buffer("h", torch.zeros(1, HIDDEN))
        self.register_buffer("c", torch.zeros(1, HIDDEN))
        self.register_buffer("context", torch.zeros(1, CONTEXT))

    def forward(self, chunk: torch.Tensor) -> torch.Tensor:
        x = torch.cat([self.context, chunk], dim=1)           # [1, 576]
        x = F.pad(x, (0, 64), mode="reflect").unsqueeze(1)    # [1, 1, 640]
        x = self.stft_conv(x)                                 # [1, 258, 4]
        x = torch.sqrt(x[:, :129] ** 2 + x[:, 129:] ** 2)     # [1, 129, 4] magnitudes
        x = F.relu(self.conv1(x))
        x = F.relu(self.conv2(x))
        x = F.relu(self.conv3(x))
        x = F.relu(self.conv4(x)).squeeze(-1)                 # [1, 128]
        h, c = self.lstm_cell(x, (self.h, self.c))
        self.h.copy_(h)
        self.c.copy_(c)
        self.context.copy_(chunk[:, CHUNK - CONTEXT:])
        y = torch.sigmoid(self.final_conv(F.relu(h).unsqueeze(-1)))  # [1, 1, 1]
        return y.squeeze(-1)                                  # [1, 1]


def weights_path() -> str:
    import silero_vad
    return os.path.join(os.path.dirname(silero_vad.__file__), "data", "silero_vad_16k.safetensors")


# The TorchScript model's parameter names -> SileroVAD's (= the safetensors file's).
JIT_NAMES = {
    "stft.forward_basis_buffer": "stft_conv.weight",
    "encoder.0.reparam_conv.weight": "conv1.weight", "encoder.0.reparam_conv.bias": "conv1.bias",
    "encoder.1.reparam_conv.weight": "conv2.weight", "encoder.1.reparam_conv.bias": "conv2.bias",
    "encoder.2.reparam_conv.weight": "conv3.weight", "encoder.2.reparam_conv.bias": "conv3.bias",
    "encoder.3.reparam_conv.weight": "conv4.weight", "encoder.3.reparam_conv.bias": "conv4.bias",
    "decoder.rnn.weight_ih": "lstm_cell.weight_ih", "decoder.rnn.weight_hh": "lstm_cell.weight_hh",
    "decoder.rnn.bias_ih": "lstm_cell.bias_ih", "decoder.rnn.bias_hh": "lstm_cell.bias_hh",
    "decoder.decoder.2.weight": "final_conv.weight", "decoder.decoder.2.bias": "final_conv.bias",
}


def jit_weights() -> dict[str, torch.Tensor]:
    """The 16 kHz weights of the package's TorchScript model (silero_vad.jit)."""
    sd = package_model().state_dict()
    return {JIT_NAMES[k[len("_model."):]]: v.detach().clone()
            for k, v in sd.items() if k[len("_model."):] in JIT_NAMES}


def build_model(weights: str = "jit") -> SileroVAD:
    """weights: "jit" (the package's TorchScript model, which
    get_speech_timestamps runs) or "safetensors" (silero_vad_16k.safetensors,
    the tinygrad model's file, which holds other values: see the module doc)."""
    from safetensors.torch import load_file
    sd = jit_weights() if weights == "jit" else load_file(weights_path())
    model = SileroVAD()
    missing, unexpected = model.load_state_dict(sd, strict=False)
    assert not unexpected and set(missing) == {"h", "c", "context"}, (missing, unexpected)
    return model.eval()


def package_model():
    """The package's own TorchScript model (what get_speech_timestamps runs)."""
    import silero_vad
    threads = torch.get_num_threads()
    model = silero_vad.load_silero_vad()  # importing silero_vad sets 1 thread
    torch.set_num_threads(threads)
    return model


def read_wav(path: str) -> np.ndarray:
    """A 16 kHz mono 16-bit WAV as float32 in [-1, 1) (int16 / 32768, as
    torchaudio's loader, which the package's read_audio uses)."""
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise ValueError(f"{path}: need 16000 Hz mono 16-bit, got {w.getframerate()} Hz, "
                             f"{w.getnchannels()} channels, {8 * w.getsampwidth()} bits")
        data = w.readframes(w.getnframes())
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def chunks(audio: np.ndarray):
    """The chunks get_speech_timestamps feeds the model: CHUNK samples each,
    the last one padded with zeros."""
    for start in range(0, len(audio), CHUNK):
        c = audio[start:start + CHUNK]
        if len(c) < CHUNK:
            c = np.pad(c, (0, CHUNK - len(c)))
        yield torch.from_numpy(np.ascontiguousarray(c)).reshape(1, CHUNK)


def package_probs(model, audio: np.ndarray) -> np.ndarray:
    model.reset_states()
    with torch.no_grad():
        return np.array([model(c, SAMPLE_RATE).item() for c in chunks(audio)], dtype=np.float32)


def module_probs(model: SileroVAD, audio: np.ndarray) -> np.ndarray:
    for b in (model.h, model.c, model.context):
        b.zero_()
    with torch.no_grad():
        return np.array([model(c).item() for c in chunks(audio)], dtype=np.float32)


def tern_probs(method, audio: np.ndarray) -> np.ndarray:
    method.reset()
    return np.array([float(method(c.numpy())[0].reshape(-1)[0]) for c in chunks(audio)], dtype=np.float32)


def export(out: str, weights: str = "jit"):
    """Writes `out`; returns the PyTorch module and the tern.Program."""
    import tern
    model = build_model(weights)
    example = (torch.zeros(1, CHUNK),)
    program = tern.export(model, example, metadata={"vad.settings": settings_text().encode()})
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    program.save(out)
    return model, program


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out/vad.tern")
    ap.add_argument("--weights", choices=["jit", "safetensors"], default="jit",
                    help="the package's TorchScript model's weights (default) or silero_vad_16k.safetensors")
    ap.add_argument("--check", nargs="*", default=[], help="WAV files (16 kHz) to compare on")
    args = ap.parse_args()
    model, _ = export(args.out, args.weights)
    print(f"wrote {args.out} ({os.path.getsize(args.out):,} bytes)")
    if args.check:
        import tern
        ref = package_model()
        method = tern.load(args.out)
        worst = 0.0
        for path in args.check:
            audio = read_wav(path)
            p_pkg = package_probs(ref, audio)
            p_mod = module_probs(model, audio)
            p_tern = tern_probs(method, audio)
            d_mod = float(np.abs(p_mod - p_pkg).max())
            d_tern = float(np.abs(p_tern - p_pkg).max())
            worst = max(worst, d_mod, d_tern)
            print(f"{os.path.basename(path)}: {len(p_pkg)} chunks, max |p - package|: "
                  f"PyTorch module {d_mod:.1e}, Tern {d_tern:.1e}")
        if worst > 1e-4:
            print(f"error: probabilities differ from the package's by {worst:.1e} (> 1e-4)", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
