// Cutouts (issue 25): MobileSAM's mask for foreground points, as a sticker.
//
//   build/examples/cutout IMAGE x,y [x,y ...] -o sticker.png [--mask mask.png]
//                         [--model PREFIX] [--threads N] [--time N] [--logits PATH] [--dump-input PATH]
//
// Decodes IMAGE (PNG or JPEG; examples/common/image_io.h), prepares it as
// MobileSAM's SamPredictor does (examples/cutout/convert.py: resize the
// longer side to 1024 with PIL's bilinear filter on the 8-bit image,
// normalise, pad to 1024x1024; the constants come from the files'
// "cutout.settings" metadata), runs the image encoder (PREFIX-encoder.tern)
// and the prompt decoder (PREFIX-decoder.tern) with the points moved into the
// resized frame, upscales the chosen 256x256 mask logits to the padded 1024
// square, crops the resized image's part, resizes it to the original size and
// thresholds it. Writes the original RGB with the mask as alpha (an RGBA PNG),
// and with --mask the mask alone (grey PNG, 0 or 255).
//
// Points are foreground points in the image's pixels (x to the right, y
// down). One point: the best of the three multimask outputs by the model's IoU
// prediction; more: the single-mask output (what SamPredictor advises).
// --model PREFIX defaults to out/cutout. --time N runs the encoder and the
// decoder N more times each and prints their median milliseconds on stderr.
// --logits PATH writes the mask logits at the original size (float32,
// [H, W]) and --dump-input PATH the encoder's input (float32, [1, 3, S, S])
// for the tests. Errors go to stderr, exit status 1.
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "examples/common/image_io.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace {

using image_io::Image;
using image_io::Tap;

// cutout.settings (convert.py writes it into both files).
struct Settings {
  int img_size = 0, embed_size = 0, low_res = 0, max_points = 0;
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
  float mask_threshold = 0;
  std::string weights;
};

struct Point {
  float x, y;
};

// ---- ResizeLongestSide ----------------------------------------------------------

// get_preprocess_shape: the longer side to `target`, the other rounded.
void resized_size(int h, int w, int target, int* nh, int* nw) {
  const double scale = target * 1.0 / std::max(h, w);
  *nh = static_cast<int>(h * scale + 0.5);
  *nw = static_cast<int>(w * scale + 0.5);
}

// One output pixel's taps in PIL's resample (libImaging/Resample.c): a
// triangle filter widened by the scale when shrinking, weights normalised
// and turned into fixed point with 22 fractional bits.
struct PilTaps {
  std::vector<int> first, count;
  std::vector<int32_t> weights;  // [out, ksize]
  int ksize = 0;
};

constexpr int kPrecisionBits = 32 - 8 - 2;

PilTaps pil_bilinear_taps(int in, int out) {
  const double scale = double(in) / out, filterscale = std::max(scale, 1.0), support = filterscale;
  PilTaps t;
  t.ksize = static_cast<int>(std::ceil(support)) * 2 + 1;
  t.first.resize(out), t.count.resize(out), t.weights.assign(size_t(out) * t.ksize, 0);
  std::vector<double> k(t.ksize);
  for (int o = 0; o < out; ++o) {
    const double center = (o + 0.5) * scale;
    int lo = std::max(static_cast<int>(center - support + 0.5), 0);
    int hi = std::min(static_cast<int>(center + support + 0.5), in);
    double sum = 0;
    for (int i = 0; i < hi - lo; ++i) {
      double x = std::fabs((i + lo - center + 0.5) / filterscale);
      k[i] = x < 1 ? 1 - x : 0;
      sum += k[i];
    }
    for (int i = 0; i < hi - lo; ++i) {
      double w = sum != 0 ? k[i] / sum : k[i];
      t.weights[size_t(o) * t.ksize + i] = static_cast<int32_t>(w < 0 ? -0.5 + w * (1 << kPrecisionBits)
                                                                      : 0.5 + w * (1 << kPrecisionBits));
    }
    t.first[o] = lo, t.count[o] = hi - lo;
  }
  return t;
}

uint8_t clip8(int64_t v) {
  v >>= kPrecisionBits;
  return static_cast<uint8_t>(v < 0 ? 0 : v > 255 ? 255 : v);
}

// One pass of PIL's resample over rows (horizontal) or columns (vertical) of
// an 8-bit RGB image [h, w, 3]: src -> [h, nw, 3] or [nh, w, 3], rounded.
std::vector<uint8_t> pil_pass(const std::vector<uint8_t>& src, int h, int w, int out, bool vertical) {
  const PilTaps t = pil_bilinear_taps(vertical ? h : w, out);
  const int oh = vertical ? out : h, ow = vertical ? w : out;
  // Element steps between neighbouring taps, and per output row/column.
  const size_t tap_step = vertical ? size_t(w) * 3 : 3;
  std::vector<uint8_t> dst(size_t(oh) * ow * 3);
  for (int y = 0; y < oh; ++y) {
    for (int x = 0; x < ow; ++x) {
      const int o = vertical ? y : x;
      const int32_t* wt = &t.weights[size_t(o) * t.ksize];
      const uint8_t* base = vertical ? &src[(size_t(t.first[o]) * w + x) * 3] : &src[(size_t(y) * w + t.first[o]) * 3];
      for (int c = 0; c < 3; ++c) {
        int64_t ss = int64_t(1) << (kPrecisionBits - 1);
        for (int i = 0; i < t.count[o]; ++i) ss += int64_t(base[i * tap_step + c]) * wt[i];
        dst[(size_t(y) * ow + x) * 3 + c] = clip8(ss);
      }
    }
  }
  return dst;
}

// PIL's Image.resize(BILINEAR) of an RGB image (torchvision's resize of a
// PIL image, what SamPredictor calls): two passes, each rounded to 8 bits,
// a pass skipped when its size stays. Horizontal first, except when the
// height shrinks by more than twice the width does: Pillow 13 (its PR 9549)
// then runs the vertical pass first, which moves about a quarter of the
// pixels by one grey level (Pillow 12 and older: horizontal always first).
std::vector<uint8_t> pil_resize(const Image& img, int nh, int nw) {
  const int h = img.height, w = img.width;
  const bool vertical_first = nh < h && (h - nh) > 2 * (w - nw);
  std::vector<uint8_t> px = img.rgb;
  if (vertical_first && nh != h) px = pil_pass(px, h, w, nh, true);
  if (nw != w) px = pil_pass(px, vertical_first ? nh : h, w, nw, false);
  if (!vertical_first && nh != h) px = pil_pass(px, h, nw, nh, true);
  return px;
}

// The encoder's input [1, 3, S, S]: (pixel - mean) / std, zero padding at
// the bottom and right (Sam.preprocess).
void encoder_input(const std::vector<uint8_t>& resized, int nh, int nw, const Settings& s, std::vector<float>* x) {
  const size_t S = size_t(s.img_size);
  x->assign(3 * S * S, 0.0f);
  for (int y = 0; y < nh; ++y) {
    for (int xx = 0; xx < nw; ++xx) {
      for (int c = 0; c < 3; ++c) {
        float v = resized[(size_t(y) * nw + xx) * 3 + c];
        (*x)[(c * S + y) * S + xx] = (v - s.mean[c]) / s.std[c];
      }
    }
  }
}

// ---- postprocessing -------------------------------------------------------------

// [in_h, in_w] (row stride `stride`) -> [out_h, out_w] with the taps of a
// resize from (full_h, full_w); only the first out_h x out_w are computed.
void resize_plane(const float* in, int stride, const std::vector<Tap>& ty, const std::vector<Tap>& tx, int out_h,
                  int out_w, float* out) {
  for (int y = 0; y < out_h; ++y) {
    const Tap& a = ty[y];
    const float* r0 = in + size_t(a.i0) * stride;
    const float* r1 = in + size_t(a.i1) * stride;
    for (int x = 0; x < out_w; ++x) {
      const Tap& b = tx[x];
      out[size_t(y) * out_w + x] = a.w0 * (b.w0 * r0[b.i0] + b.w1 * r0[b.i1]) + a.w1 * (b.w0 * r1[b.i0] + b.w1 * r1[b.i1]);
    }
  }
}

// Sam.postprocess_masks: low-res logits [L, L] -> the padded S x S square
// (only its top-left nh x nw, the crop, is needed) -> [h, w].
std::vector<float> postprocess(const float* low, const Settings& s, int nh, int nw, int h, int w) {
  std::vector<float> crop(size_t(nh) * nw), out(size_t(h) * w);
  std::vector<Tap> up = image_io::bilinear_taps(s.low_res, s.img_size);
  resize_plane(low, s.low_res, up, up, nh, nw, crop.data());
  resize_plane(crop.data(), nw, image_io::bilinear_taps(nh, h), image_io::bilinear_taps(nw, w), h, w, out.data());
  return out;
}

// ---- the files' metadata ----------------------------------------------------------

bool parse_settings(const tern::Module& module, const char* path, Settings* s) {
  tern::Result<tern::Span<const uint8_t>> blob = module.metadata("cutout.settings");
  if (!blob.ok()) {
    fprintf(stderr, "cutout: %s: %s (examples/cutout/convert.py writes the model files)\n", path,
            tern::last_error_message());
    return false;
  }
  std::string text(reinterpret_cast<const char*>(blob->data()), blob->size());
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "img_size") s->img_size = atoi(value.c_str());
    if (key == "embed_size") s->embed_size = atoi(value.c_str());
    if (key == "low_res") s->low_res = atoi(value.c_str());
    if (key == "max_points") s->max_points = atoi(value.c_str());
    if (key == "mask_threshold") s->mask_threshold = strtof(value.c_str(), nullptr);
    if (key == "weights") s->weights = value;
    float* dst = key == "pixel_mean" ? s->mean : key == "pixel_std" ? s->std : nullptr;
    if (dst != nullptr && sscanf(value.c_str(), "%f,%f,%f", &dst[0], &dst[1], &dst[2]) != 3) s->img_size = 0;
  }
  bool ok = s->img_size > 0 && s->embed_size > 0 && s->low_res > 0 && s->max_points > 0 && s->std[0] != 0 &&
            s->std[1] != 0 && s->std[2] != 0;
  if (!ok) fprintf(stderr, "cutout: %s: malformed cutout.settings metadata\n", path);
  return ok;
}

// ---- main -----------------------------------------------------------------------

struct Args {
  const char* image = nullptr;
  const char* out = nullptr;
  const char* mask = nullptr;
  const char* logits = nullptr;
  const char* dump_input = nullptr;
  std::string prefix = "out/cutout";
  std::vector<Point> points;
  int time_runs = 0;
  int threads = 0;
};

bool parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if ((s == "-o" || s == "--mask" || s == "--model" || s == "--time" || s == "--threads" || s == "--logits" ||
         s == "--dump-input") &&
        i + 1 < argc) {
      const char* v = argv[++i];
      if (s == "-o") a->out = v;
      if (s == "--mask") a->mask = v;
      if (s == "--logits") a->logits = v;
      if (s == "--dump-input") a->dump_input = v;
      if (s == "--model") a->prefix = v;
      if (s == "--time") a->time_runs = atoi(v);
      if (s == "--threads") a->threads = atoi(v);
    } else if (!s.empty() && s[0] != '-' && a->image == nullptr) {
      a->image = argv[i];
    } else if (!s.empty() && (s[0] != '-' || isdigit(static_cast<unsigned char>(s[1])))) {
      Point p;
      char rest;
      if (sscanf(s.c_str(), "%f,%f%c", &p.x, &p.y, &rest) != 2) return false;
      a->points.push_back(p);
    } else {
      return false;
    }
  }
  return a->image != nullptr && a->out != nullptr && !a->points.empty();
}

bool load(tern::Module* module, const std::string& path, int threads, Settings* s) {
  if (module->load(path.c_str(), {tern::Module::LoadMode::Mmap, threads}) != tern::Error::Ok) {
    fprintf(stderr, "cutout: %s: %s\n", path.c_str(), tern::last_error_message());
    return false;
  }
  return parse_settings(*module, path.c_str(), s);
}

// Median milliseconds of `runs` calls of module.forward(inputs); -1 on failure.
double median_ms(tern::Module& module, tern::Span<const tern::Tensor> inputs, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (!module.forward(inputs).ok()) return -1;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

bool write_floats(const char* path, const std::vector<float>& v) {
  FILE* f = fopen(path, "wb");
  bool ok = f != nullptr && fwrite(v.data(), sizeof(float), v.size(), f) == v.size();
  if (f != nullptr) ok = fclose(f) == 0 && ok;
  if (!ok) fprintf(stderr, "cutout: %s: cannot write\n", path);
  return ok;
}

int fail_run(const char* what) {
  fprintf(stderr, "cutout: %s: %s\n", what, tern::last_error_message());
  return 1;
}

// The decoder's point inputs: the points scaled into the resized frame (in
// double, as ResizeLongestSide.apply_coords), label 1, then SamPredictor's
// padding point (0, 0) with label -1.
struct Prompt {
  std::vector<float> coords, labels;  // [n, 2], [n]
};

Prompt prompt(const std::vector<Point>& points, const Image& img, int nh, int nw) {
  Prompt pr;
  for (const Point& p : points) {
    pr.coords.push_back(static_cast<float>(p.x * (double(nw) / img.width)));
    pr.coords.push_back(static_cast<float>(p.y * (double(nh) / img.height)));
    pr.labels.push_back(1.0f);
  }
  pr.coords.insert(pr.coords.end(), {0.0f, 0.0f});
  pr.labels.push_back(-1.0f);
  return pr;
}

// One point: the multimask output (1..3) with the best IoU prediction; more:
// the single-mask output 0 (SamPredictor's multimask_output advice).
int choose_mask(const float* iou, size_t num_points) {
  if (num_points != 1) return 0;
  int k = 1;
  for (int j = 2; j < 4; ++j) k = iou[j] > iou[k] ? j : k;
  return k;
}

// The sticker (RGB with the mask as alpha), and --mask, --logits; counts the
// mask's pixels into *inside.
bool write_outputs(const Args& args, const Image& img, const std::vector<float>& logits, float threshold,
                   size_t* inside) {
  const size_t pixels = size_t(img.width) * img.height;
  std::vector<uint8_t> rgba(pixels * 4), alpha(pixels);
  for (size_t i = 0; i < pixels; ++i) {
    alpha[i] = logits[i] > threshold ? 255 : 0;
    *inside += alpha[i] != 0;
    memcpy(&rgba[i * 4], &img.rgb[i * 3], 3);
    rgba[i * 4 + 3] = alpha[i];
  }
  if (!image_io::write_png("cutout", args.out, img.width, img.height, 4, rgba.data())) return false;
  if (args.mask != nullptr && !image_io::write_png("cutout", args.mask, img.width, img.height, 1, alpha.data())) {
    return false;
  }
  return args.logits == nullptr || write_floats(args.logits, logits);
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) {
    fprintf(stderr, "usage: %s IMAGE x,y [x,y ...] -o sticker.png [--mask mask.png] [--model PREFIX] "
            "[--threads N] [--time N] [--logits PATH] [--dump-input PATH]\n", argv[0]);
    return 2;
  }
  Image img;
  if (!image_io::decode("cutout", args.image, &img)) return 1;
  for (const Point& p : args.points) {
    if (!(p.x >= 0 && p.y >= 0 && p.x < img.width && p.y < img.height)) {
      fprintf(stderr, "cutout: point %g,%g is outside the %dx%d image\n", p.x, p.y, img.width, img.height);
      return 1;
    }
  }
  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    return fail_run("registering kernels");
  }
  tern::Module encoder, decoder;
  Settings s, ds;
  if (!load(&encoder, args.prefix + "-encoder.tern", args.threads, &s) ||
      !load(&decoder, args.prefix + "-decoder.tern", args.threads, &ds)) {
    return 1;
  }
  if (s.weights != ds.weights || s.img_size != ds.img_size || s.embed_size != ds.embed_size) {
    fprintf(stderr, "cutout: %s-encoder.tern and %s-decoder.tern come from different conversions\n",
            args.prefix.c_str(), args.prefix.c_str());
    return 1;
  }
  if (int(args.points.size()) > s.max_points) {
    fprintf(stderr, "cutout: %zu points; the model takes at most %d\n", args.points.size(), s.max_points);
    return 1;
  }

  // The encoder on the resized, normalised, padded image.
  int nh, nw;
  resized_size(img.height, img.width, s.img_size, &nh, &nw);
  std::vector<float> x;
  encoder_input(pil_resize(img, nh, nw), nh, nw, s, &x);
  if (args.dump_input != nullptr && !write_floats(args.dump_input, x)) return 1;
  const int64_t S = s.img_size, E = s.embed_size;
  tern::Tensor image = tern::make_tensor(x.data(), tern::ScalarType::Float32, {1, 3, S, S});
  auto enc_out = encoder.forward({&image, 1});
  if (!enc_out.ok()) return fail_run("encoder");
  const tern::Tensor& emb_out = (*enc_out)[0];
  if (emb_out.numel != 256 * E * E) return fprintf(stderr, "cutout: unexpected encoder output\n"), 1;
  // A copy: the encoder's outputs are valid until its next run (--time).
  std::vector<float> emb(emb_out.data_as<float>(), emb_out.data_as<float>() + emb_out.numel);

  // The decoder: the points in the resized frame and the padding point.
  Prompt pr = prompt(args.points, img, nh, nw);
  const int64_t n = static_cast<int64_t>(pr.labels.size());
  tern::Tensor dec_in[3] = {tern::make_tensor(emb.data(), tern::ScalarType::Float32, {1, 256, E, E}),
                            tern::make_tensor(pr.coords.data(), tern::ScalarType::Float32, {1, n, 2}),
                            tern::make_tensor(pr.labels.data(), tern::ScalarType::Float32, {1, n})};
  auto dec_out = decoder.forward({dec_in, 3});
  if (!dec_out.ok()) return fail_run("decoder");
  const tern::Tensor& masks = (*dec_out)[0];  // [1, 4, L, L]
  const float* iou = (*dec_out)[1].data_as<float>();  // [1, 4]
  const int64_t L = s.low_res;
  if (masks.numel != 4 * L * L || (*dec_out)[1].numel != 4) return fprintf(stderr, "cutout: unexpected decoder output\n"), 1;
  const int k = choose_mask(iou, args.points.size());
  std::vector<float> logits = postprocess(masks.data_as<float>() + k * L * L, s, nh, nw, img.height, img.width);

  size_t inside = 0;
  if (!write_outputs(args, img, logits, s.mask_threshold, &inside)) return 1;
  const size_t pixels = size_t(img.width) * img.height;
  printf("mask %d (IoU prediction %.4f): %zu of %zu pixels (%.1f%%); weights: %s\n", k, iou[k], inside, pixels,
         100.0 * inside / pixels, s.weights.c_str());

  if (args.time_runs > 0) {
    double enc_ms = median_ms(encoder, {&image, 1}, args.time_runs);
    double dec_ms = median_ms(decoder, {dec_in, 3}, args.time_runs);
    if (enc_ms < 0 || dec_ms < 0) return fail_run("timing");
    fprintf(stderr, "encoder_ms_median\t%.3f\ndecoder_ms_median\t%.3f\n", enc_ms, dec_ms);
  }
  return 0;
}
