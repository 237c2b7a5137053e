// Noise suppression (issue 25): DeepFilterNet3 on a 48 kHz WAV file.
//
//   build/examples/denoise IN.wav OUT.wav [--model PATH] [--time] [--atten-lim DB]
//
// Reads IN.wav (48 kHz, mono, 16-bit PCM; another rate or format is refused
// with what it is and how to convert it), runs it as a stream of 10 ms hops
// of 480 samples, as libDF (DeepFilterNet's C runtime) does, and writes the
// enhanced speech to OUT.wav (48 kHz mono 16-bit, the input's length). Per hop:
//
//   STFT       the hop and the one before it (960 samples), Vorbis window,
//              960-point FFT scaled by 2 * hop / fft_size^2 -> 481 bins
//   features   ERB: the power of each of 32 bands in dB, minus its
//              exponential mean, / 40; complex: the 96 lowest bins, each
//              divided by the square root of its exponential mean magnitude
//   model      the .tern file's forward, one frame a call; the model's
//              convolution histories and GRU states stay in the loaded
//              method between calls (reset_state() at the start)
//   gains      the 32 ERB gains, each on its band's bins, applied to the
//              spectrum of 2 frames back (the model's lookahead)
//   deep filter  bins 0..95 of that frame replaced by the sum over the 5
//              frames t-4..t of spectrum x complex coefficient
//   ISTFT      inverse FFT, Vorbis window, overlap-add of the two halves
//
// The stream is delayed by fft_size - hop + 2 hops = 1440 samples (30 ms);
// the program feeds 3 hops of zeros after the file and drops the first 1440
// output samples, so OUT.wav lines up with IN.wav.
// Everything the steps need comes from the file's "denoise.settings"
// metadata (examples/denoise/convert.py). --model defaults to
// out/denoise.tern. --atten-lim DB limits the attenuation as libDF's
// df_create(path, atten_lim_db, ...) does (100, the default: no limit).
// --time prints to stderr the microseconds per hop (the whole step: STFT,
// features, model, filters, ISTFT; and the model alone), the median of 5
// passes over the file, and the real-time factor (time per hop / 10 ms).
// Errors go to stderr, exit status 1.
#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cmath>
#include <complex>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "examples/common/wav_io.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace {

using cfloat = std::complex<float>;
constexpr double kPi = 3.14159265358979323846;

// a * b without std::complex's NaN and infinity handling (a library call per product in GCC).
inline cfloat mul(cfloat a, cfloat b) {
  return {a.real() * b.real() - a.imag() * b.imag(), a.real() * b.imag() + a.imag() * b.real()};
}

bool fail(const std::string& what) {
  fprintf(stderr, "denoise: %s\n", what.c_str());
  return false;
}


// ---- settings ---------------------------------------------------------------

// denoise.settings (examples/denoise/convert.py).
struct Settings {
  int sample_rate = 0, fft_size = 0, hop_size = 0, nb_erb = 0, nb_df = 0, df_order = 0, lookahead = 0;
  float norm_alpha = 0, min_db_thresh = -15, max_db_erb_thresh = 35, max_db_df_thresh = 35;
  std::vector<int> erb_widths;
};

bool read_settings(const tern::Module& module, Settings* s) {
  tern::Result<tern::Span<const uint8_t>> text = module.metadata("denoise.settings");
  if (!text.ok()) return fail(std::string("no denoise.settings metadata: ") + tern::last_error_message());
  std::string all(reinterpret_cast<const char*>(text->data()), text->size()), line;
  for (size_t pos = 0; pos < all.size(); pos += line.size() + 1) {
    line = all.substr(pos, all.find('\n', pos) - pos);
    const size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    const std::string key = line.substr(0, eq);
    const char* v = line.c_str() + eq + 1;
    if (key == "sample_rate") s->sample_rate = atoi(v);
    else if (key == "fft_size") s->fft_size = atoi(v);
    else if (key == "hop_size") s->hop_size = atoi(v);
    else if (key == "nb_erb") s->nb_erb = atoi(v);
    else if (key == "nb_df") s->nb_df = atoi(v);
    else if (key == "df_order") s->df_order = atoi(v);
    else if (key == "lookahead") s->lookahead = atoi(v);
    else if (key == "norm_alpha") s->norm_alpha = strtof(v, nullptr);
    else if (key == "min_db_thresh") s->min_db_thresh = strtof(v, nullptr);
    else if (key == "max_db_erb_thresh") s->max_db_erb_thresh = strtof(v, nullptr);
    else if (key == "max_db_df_thresh") s->max_db_df_thresh = strtof(v, nullptr);
    else if (key == "erb_widths")
      for (char* p = const_cast<char*>(v); *p != '\0';) {
        s->erb_widths.push_back(int(strtol(p, &p, 10)));
        if (*p == ',') ++p;
        else if (*p != '\0') return fail("denoise.settings: bad erb_widths");
      }
  }
  int bins = 0;
  for (int w : s->erb_widths) bins += w > 0 ? w : 1 << 20;
  const int freqs = s->fft_size / 2 + 1;
  if (s->sample_rate <= 0 || s->hop_size <= 0 || s->fft_size != 2 * s->hop_size || s->nb_df <= 0 ||
      s->nb_df > freqs || s->df_order <= 0 || s->lookahead < 0 || s->lookahead >= s->df_order ||
      int(s->erb_widths.size()) != s->nb_erb || bins != freqs)
    return fail("denoise.settings: inconsistent sizes (fft_size must be 2 x hop_size, erb_widths sum to "
                "fft_size / 2 + 1, lookahead < df_order)");
  return true;
}

// The model takes (feat_erb float32 [nb_erb values], feat_spec float32 [2 x nb_df])
// and returns (gains [nb_erb], coefs [nb_df x df_order x 2], lsnr [1]), all float32:
// checked once, so the stream can read the outputs blind.
bool check_model(const tern::Module& module, const Settings& s) {
  tern::Result<tern::MethodMeta> meta = module.program().method_meta("forward");
  if (!meta.ok()) return fail(std::string("no forward method: ") + tern::last_error_message());
  const int64_t want_in[2] = {s.nb_erb, 2 * s.nb_df};
  const int64_t want_out[3] = {s.nb_erb, int64_t(s.nb_df) * s.df_order * 2, 1};
  bool ok = meta->num_inputs() == 2 && meta->num_outputs() == 3;
  for (size_t i = 0; ok && i < 2; ++i) {
    tern::Result<tern::TensorInfo> t = meta->input(i);
    ok = t.ok() && t->dtype == tern::ScalarType::Float32 && t->numel() == want_in[i];
  }
  for (size_t i = 0; ok && i < 3; ++i) {
    tern::Result<tern::TensorInfo> t = meta->output(i);
    ok = t.ok() && t->dtype == tern::ScalarType::Float32 && t->numel() == want_out[i];
  }
  if (!ok)
    return fail("the model does not take (float32 feat_erb [" + std::to_string(s.nb_erb) + "], feat_spec [2 x " +
                std::to_string(s.nb_df) + "]) to (float32 gains, coefs [" + std::to_string(want_out[1]) +
                "], lsnr) as denoise.settings says");
  return true;
}

// ---- FFT --------------------------------------------------------------------

// A complex FFT of any size whose factors are 2, 3, 4 and 5 (480 = 4^2 * 2 * 3 * 5),
// decimation in time, recursive; twiddles and factors computed once.
class Fft {
 public:
  explicit Fft(int n) : n_(n), twiddles_(size_t(n)) {
    for (int k = 0; k < n; ++k) twiddles_[size_t(k)] = std::polar(1.0, -2.0 * kPi * k / n);
    for (int m = n; m > 1;) {
      const int p = m % 4 == 0 ? 4 : m % 2 == 0 ? 2 : m % 3 == 0 ? 3 : m % 5 == 0 ? 5 : m;
      factors_.push_back(p);
      m /= p;
    }
    for (int i = 0; i < 9; ++i) dft3_[i] = std::polar(1.0, -2.0 * kPi * ((i / 3) * (i % 3) % 3) / 3);
    for (int i = 0; i < 25; ++i) dft5_[i] = std::polar(1.0, -2.0 * kPi * ((i / 5) * (i % 5) % 5) / 5);
  }
  int size() const { return n_; }
  // out[k] = sum_j in[j] e^{-2 pi i jk / n}
  void forward(const cfloat* in, cfloat* out) const {
    if (n_ == 1) out[0] = in[0];
    else work(in, 1, out, n_, 1, 0);
  }

 private:
  // The DFT of the n values in[0], in[in_stride], ... into out[0..n): p = factors_[level]
  // DFTs of m = n / p (in place in out when m > 1), then for each k < m the p outputs
  // X[k + q1 m] = sum_q (W^(q k tw_stride) Y_q[k]) w_p^(q q1), W = e^{-2 pi i / n_}, w_p = W^(n_ / p):
  // a twiddle per input (index q k tw_stride < n_) and one p-point DFT.
  void work(const cfloat* in, int in_stride, cfloat* out, int n, int tw_stride, size_t level) const {
    const int p = factors_[level], m = n / p;
    if (m > 1)
      for (int q = 0; q < p; ++q) work(in + q * in_stride, in_stride * p, out + q * m, m, tw_stride * p, level + 1);
    const cfloat* w = twiddles_.data();
    cfloat y[5];
    for (int k = 0; k < m; ++k) {
      for (int q = 0; q < p; ++q) {
        const cfloat v = m > 1 ? out[q * m + k] : in[q * in_stride];
        y[q] = q == 0 || k == 0 ? v : mul(v, w[q * k * tw_stride]);
      }
      cfloat* o = out + k;
      if (p == 4) {  // w_4 = -i
        const cfloat a = y[0] + y[2], b = y[0] - y[2], c = y[1] + y[3], d = y[1] - y[3];
        const cfloat di(d.imag(), -d.real());  // -i d
        o[0] = a + c, o[m] = b + di, o[2 * m] = a - c, o[3 * m] = b - di;
      } else if (p == 2) {
        o[0] = y[0] + y[1], o[m] = y[0] - y[1];
      } else {  // 3, 5: the p-point DFT matrix
        const cfloat* d = p == 3 ? dft3_ : dft5_;
        for (int q1 = 0; q1 < p; ++q1) {
          cfloat sum = y[0];
          for (int q = 1; q < p; ++q) sum += mul(y[q], d[q1 * p + q]);
          o[q1 * m] = sum;
        }
      }
    }
  }

  int n_;
  std::vector<cfloat> twiddles_;  // e^{-2 pi i k / n}, k < n
  std::vector<int> factors_;
  cfloat dft3_[9], dft5_[25];     // [q1][q] = e^{-2 pi i q q1 / p}
};

// The FFT of n real samples (n even) through a complex FFT of n / 2: the even
// samples as real parts, the odd ones as imaginary parts, then split.
class RealFft {
 public:
  explicit RealFft(int n) : half_(n / 2), twiddles_(size_t(n / 2 + 1)), z_(size_t(n / 2)), zf_(size_t(n / 2)) {
    for (int k = 0; k <= n / 2; ++k) twiddles_[size_t(k)] = std::polar(1.0, -2.0 * kPi * k / n);
  }
  // spec[k] = sum_j x[j] e^{-2 pi i jk / n}, k = 0..n/2
  void forward(const float* x, cfloat* spec) {
    const int h = half_.size();
    for (int j = 0; j < h; ++j) z_[size_t(j)] = cfloat(x[2 * j], x[2 * j + 1]);
    half_.forward(z_.data(), zf_.data());
    // E[k] = (Z[k] + conj Z[h-k]) / 2, O[k] = (Z[k] - conj Z[h-k]) / 2i, X[k] = E[k] + W^k O[k]
    for (int k = 0; k <= h; ++k) {
      const cfloat a = zf_[size_t(k % h)], b = std::conj(zf_[size_t((h - k) % h)]);
      const cfloat e = 0.5f * (a + b), d = a - b, o(0.5f * d.imag(), -0.5f * d.real());  // (a - b) / 2i
      spec[k] = e + mul(twiddles_[size_t(k)], o);
    }
  }
  // x[j] = sum_k X[k] e^{+2 pi i jk / n} over the Hermitian spectrum (unnormalized);
  // the imaginary parts of the DC and Nyquist bins are ignored.
  void inverse(const cfloat* spec, float* x) {
    const int h = half_.size();
    // Z[k] = 2 E[k] + 2i O[k] with 2 E[k] = X[k] + conj X[h-k], 2 O[k] = (X[k] - conj X[h-k]) W^-k;
    // z = IFFT(Z) = conj(FFT(conj Z)): x[2j] = Re z[j], x[2j + 1] = Im z[j].
    for (int k = 0; k < h; ++k) {
      cfloat a = spec[k], b = std::conj(spec[h - k]);
      if (k == 0) a = cfloat(a.real(), 0), b = cfloat(spec[h].real(), 0);
      const cfloat o = mul(a - b, std::conj(twiddles_[size_t(k)]));
      const cfloat zk = (a + b) + cfloat(-o.imag(), o.real());  // + i o
      z_[size_t(k)] = std::conj(zk);
    }
    half_.forward(z_.data(), zf_.data());
    for (int j = 0; j < h; ++j) {
      x[2 * j] = zf_[size_t(j)].real();
      x[2 * j + 1] = -zf_[size_t(j)].imag();
    }
  }

 private:
  Fft half_;
  std::vector<cfloat> twiddles_;  // e^{-2 pi i k / n}, k <= n / 2
  std::vector<cfloat> z_, zf_;
};

// ---- the stream -------------------------------------------------------------

// libDF's per-hop processing (DfTract::process with df_create's settings)
// around the model; all buffers sized at construction.
class Denoiser {
 public:
  // method: the module's loaded forward (for reset_state()).
  Denoiser(const Settings& s, tern::Module* module, tern::Method* method, float atten_lim_db)
      : s_(s), module_(module), method_(method), fft_(s.fft_size), freqs_(s.fft_size / 2 + 1) {
    const int n = s.fft_size, hop = s.hop_size;
    window_.resize(size_t(n));
    for (int i = 0; i < n; ++i) {  // Vorbis: sin(pi/2 sin^2(pi (i + 0.5) / n))
      const double sn = std::sin(0.5 * kPi * (i + 0.5) / (n / 2));
      window_[size_t(i)] = float(std::sin(0.5 * kPi * sn * sn));
    }
    wnorm_ = float(2 * hop) / float(n * n);
    const float lim = std::fabs(atten_lim_db);
    atten_ = lim >= 100 ? -1.0f : lim < 0.01f ? 1.0f : std::pow(10.0f, -lim / 20);
    for (int b = 0; b < s.nb_erb; ++b) band_.insert(band_.end(), size_t(s.erb_widths[size_t(b)]), b);
    analysis_mem_.resize(size_t(n - hop));
    synthesis_mem_.resize(size_t(n - hop));
    time_.resize(size_t(n));
    out_.resize(size_t(freqs_));
    const size_t frames = size_t(s.df_order + s.lookahead) + size_t(std::max(s.df_order, s.lookahead));
    ring_.assign(frames * size_t(freqs_), cfloat());
    feat_erb_.resize(size_t(s.nb_erb));
    feat_spec_.resize(size_t(2 * s.nb_df));
    inputs_[0] = tern::make_tensor(feat_erb_.data(), tern::ScalarType::Float32, {1, 1, 1, s.nb_erb});
    inputs_[1] = tern::make_tensor(feat_spec_.data(), tern::ScalarType::Float32, {1, 2, 1, s.nb_df});
    reset();
  }

  void reset() {
    std::fill(analysis_mem_.begin(), analysis_mem_.end(), 0.0f);
    std::fill(synthesis_mem_.begin(), synthesis_mem_.end(), 0.0f);
    std::fill(ring_.begin(), ring_.end(), cfloat());
    mean_state_ = init_state(-60, -90, s_.nb_erb);
    unit_state_ = init_state(0.001f, 0.0001f, s_.nb_df);
    head_y_ = head_x_ = 0;
    skip_ = 0;
    method_->reset_state();
  }

  double model_us = 0;  // time in the model, summed over calls

  // One hop of input samples -> one hop of output samples.
  bool process(const float* in, float* out) {
    const int hop = s_.hop_size, ny = s_.df_order + s_.lookahead;
    float energy = 0;
    for (int i = 0; i < hop; ++i) energy += in[i] * in[i];
    skip_ = energy / float(hop) < 1e-7f ? skip_ + 1 : 0;
    if (skip_ > 5) {  // libDF: a digital silence longer than 5 hops is passed as zeros, the state frozen
      std::fill(out, out + hop, 0.0f);
      return true;
    }
    head_y_ = (head_y_ + 1) % ny;  // the oldest frame's slot becomes the newest
    head_x_ = (head_x_ + 1) % nx();
    cfloat* x_new = frame_x(nx() - 1);
    analysis(in, x_new);
    std::copy(x_new, x_new + freqs_, frame_y(ny - 1));
    features(x_new);
    const auto t0 = std::chrono::steady_clock::now();
    auto result = module_->forward({inputs_, 2});
    model_us += std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count();
    if (!result.ok()) return fail(std::string("forward failed: ") + tern::last_error_message());
    const float* gains = (*result)[0].data_as<const float>();                // [nb_erb]
    const float* coefs = (*result)[1].data_as<const float>();                // [nb_df, df_order, 2]
    const float lsnr = (*result)[2].data_as<const float>()[0];
    // libDF's apply_stages: zero gains and no deep filter below min_db_thresh,
    // nothing above max_db_erb_thresh, no deep filter above max_db_df_thresh.
    const bool zero = lsnr < s_.min_db_thresh, apply_gains = !zero && lsnr <= s_.max_db_erb_thresh;
    const bool apply_df = apply_gains && lsnr <= s_.max_db_df_thresh;
    cfloat* y = frame_y(s_.df_order - 1);  // the frame `lookahead` hops back
    if (apply_gains || zero) {
      for (int f = 0; f < freqs_; ++f) y[f] *= zero ? 0.0f : gains[band_[size_t(f)]];
    } else {
      ++skip_;
    }
    std::copy(y, y + freqs_, out_.begin());
    if (apply_df) deep_filter(coefs);
    if (atten_ >= 0) {  // mix the noisy frame back in: at most -atten_lim dB of attenuation
      const cfloat* noisy = frame_x(nx() - s_.lookahead - 1);
      for (int f = 0; f < freqs_; ++f) out_[size_t(f)] = out_[size_t(f)] * (1 - atten_) + noisy[f] * atten_;
    }
    synthesis(out);
    return true;
  }

 private:
  int nx() const { return std::max(s_.df_order, s_.lookahead); }
  // The i-th of the last df_order + lookahead frames (i = 0 the oldest), gains applied in place.
  cfloat* frame_y(int i) { return ring_.data() + size_t((head_y_ + 1 + i) % (s_.df_order + s_.lookahead)) * size_t(freqs_); }
  // The i-th of the last max(df_order, lookahead) noisy frames (i = 0 the oldest).
  cfloat* frame_x(int i) {
    const size_t base = size_t(s_.df_order + s_.lookahead) * size_t(freqs_);
    return ring_.data() + base + size_t((head_x_ + 1 + i) % nx()) * size_t(freqs_);
  }

  static std::vector<float> init_state(float first, float last, int n) {
    std::vector<float> v(static_cast<size_t>(n));
    const float step = (last - first) / float(n - 1);
    for (int i = 0; i < n; ++i) v[size_t(i)] = first + float(i) * step;
    return v;
  }

  void analysis(const float* in, cfloat* spec) {
    const int n = s_.fft_size, hop = s_.hop_size;
    for (int i = 0; i < n - hop; ++i) time_[size_t(i)] = analysis_mem_[size_t(i)] * window_[size_t(i)];
    for (int i = 0; i < hop; ++i) time_[size_t(n - hop + i)] = in[i] * window_[size_t(n - hop + i)];
    std::copy(in + hop - (n - hop), in + hop, analysis_mem_.begin());
    fft_.forward(time_.data(), spec);
    for (int f = 0; f < freqs_; ++f) spec[f] *= wnorm_;
  }

  void synthesis(float* out) {
    const int n = s_.fft_size, hop = s_.hop_size;
    fft_.inverse(out_.data(), time_.data());  // unnormalized: the scale is in the analysis
    for (int i = 0; i < hop; ++i) out[i] = time_[size_t(i)] * window_[size_t(i)] + synthesis_mem_[size_t(i)];
    for (int i = 0; i < n - hop; ++i) synthesis_mem_[size_t(i)] = time_[size_t(hop + i)] * window_[size_t(hop + i)];
  }

  void features(const cfloat* spec) {
    const float a = s_.norm_alpha;
    for (int b = 0, f = 0; b < s_.nb_erb; ++b) {
      const int w = s_.erb_widths[size_t(b)];
      const float k = 1.0f / float(w);
      float e = 0;
      for (int j = 0; j < w; ++j, ++f) e += (spec[f].real() * spec[f].real() + spec[f].imag() * spec[f].imag()) * k;
      e = std::log10(e + 1e-10f) * 10.0f;
      float& m = mean_state_[size_t(b)];
      m = e * (1 - a) + m * a;
      feat_erb_[size_t(b)] = (e - m) / 40.0f;
    }
    for (int f = 0; f < s_.nb_df; ++f) {
      float& u = unit_state_[size_t(f)];
      u = std::abs(spec[f]) * (1 - a) + u * a;
      const float r = std::sqrt(u);
      feat_spec_[size_t(f)] = spec[f].real() / r;
      feat_spec_[size_t(s_.nb_df + f)] = spec[f].imag() / r;
    }
  }

  // out_[f] = sum_k x_{t-df_order+1+k}[f] * c[f, k] for f < nb_df.
  void deep_filter(const float* coefs) {
    std::fill(out_.begin(), out_.begin() + s_.nb_df, cfloat());
    for (int k = 0; k < s_.df_order; ++k) {
      const cfloat* x = frame_x(nx() - s_.df_order + k);
      for (int f = 0; f < s_.nb_df; ++f) {
        const float* c = coefs + (f * s_.df_order + k) * 2;
        out_[size_t(f)] += mul(x[f], cfloat(c[0], c[1]));
      }
    }
  }

  Settings s_;
  tern::Module* module_;
  tern::Method* method_;
  RealFft fft_;
  int freqs_;
  std::vector<float> window_, analysis_mem_, synthesis_mem_, mean_state_, unit_state_, feat_erb_, feat_spec_;
  std::vector<int> band_;                  // bin -> ERB band
  std::vector<float> time_;                // the windowed frame [fft_size]
  std::vector<cfloat> out_;                // the output frame [freqs]
  std::vector<cfloat> ring_;               // df_order + lookahead frames y, then max(df_order, lookahead) frames x
  int head_y_ = 0, head_x_ = 0, skip_ = 0;
  float wnorm_ = 0, atten_ = -1;           // atten_ < 0: no limit
  tern::Tensor inputs_[2];                 // feat_erb [1, 1, 1, nb_erb], feat_spec [1, 2, 1, nb_df]
};

// The whole file through the stream, delay removed (the header comment).
// *us, *model_us: microseconds per hop, all and in the model.
bool run(Denoiser& dn, const Settings& s, const std::vector<float>& audio, std::vector<float>* out, double* us,
         double* model_us) {
  const size_t hop = size_t(s.hop_size), delay = size_t(s.fft_size - s.hop_size + s.lookahead * s.hop_size);
  const size_t hops = (audio.size() + delay + hop - 1) / hop;
  std::vector<float> in(hops * hop, 0.0f), enhanced(hops * hop);
  std::copy(audio.begin(), audio.end(), in.begin());
  dn.reset();
  dn.model_us = 0;
  const auto t0 = std::chrono::steady_clock::now();
  for (size_t i = 0; i < hops; ++i)
    if (!dn.process(in.data() + i * hop, enhanced.data() + i * hop)) return false;
  *us = std::chrono::duration<double, std::micro>(std::chrono::steady_clock::now() - t0).count() / double(hops);
  *model_us = dn.model_us / double(hops);
  out->assign(enhanced.begin() + long(delay), enhanced.begin() + long(delay + audio.size()));
  return true;
}

struct Options {
  const char* in = nullptr;
  const char* out = nullptr;
  const char* model = "out/denoise.tern";
  float atten_lim_db = 100;
  bool time = false;
};

bool parse(int argc, char** argv, Options* o) {
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a == "--model" && i + 1 < argc) o->model = argv[++i];
    else if (a == "--atten-lim" && i + 1 < argc) o->atten_lim_db = strtof(argv[++i], nullptr);
    else if (a == "--time") o->time = true;
    else if (a[0] != '-' && o->in == nullptr) o->in = argv[i];
    else if (a[0] != '-' && o->out == nullptr) o->out = argv[i];
    else return false;
  }
  return o->out != nullptr;
}

}  // namespace

int main(int argc, char** argv) {
  Options opt;
  if (!parse(argc, argv, &opt)) {
    fprintf(stderr, "usage: %s IN.wav OUT.wav [--model out/denoise.tern] [--time] [--atten-lim DB]\n", argv[0]);
    return 1;
  }
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    fprintf(stderr, "denoise: %s\n", tern::last_error_message());
    return 1;
  }
  tern::Module module;
  if (module.load(opt.model, {tern::Module::LoadMode::Mmap, 1}) != tern::Error::Ok) {
    fprintf(stderr, "denoise: %s: %s\n", opt.model, tern::last_error_message());
    return 1;
  }
  Settings s;
  std::vector<float> audio, enhanced;
  if (!read_settings(module, &s) || !check_model(module, s) || !wav_io::read("denoise", opt.in, s.sample_rate, &audio)) return 1;
  tern::Method* method = module.method();
  if (method == nullptr) return fail(std::string("no forward method: ") + tern::last_error_message()), 1;
  Denoiser dn(s, &module, method, opt.atten_lim_db);
  double us = 0, model_us = 0;
  if (!run(dn, s, audio, &enhanced, &us, &model_us) || !wav_io::write("denoise", opt.out, s.sample_rate, enhanced)) return 1;
  if (opt.time) {
    std::vector<double> all, model;
    for (int r = 0; r < 5; ++r) {
      if (!run(dn, s, audio, &enhanced, &us, &model_us)) return 1;
      all.push_back(us);
      model.push_back(model_us);
    }
    std::sort(all.begin(), all.end());
    std::sort(model.begin(), model.end());
    const double hop_us = 1e6 * s.hop_size / s.sample_rate;
    fprintf(stderr, "denoise: %.1f us per hop (model %.1f; median of 5 runs of %zu hops), real-time factor %.4f\n",
            all[2], model[2], (audio.size() + size_t(s.hop_size) - 1) / size_t(s.hop_size), all[2] / hop_us);
  }
  return 0;
}
