// Scene recognition (issue 25): EfficientNet-Lite0 (ImageNet) on a photo.
//
//   build/examples/scene IMAGE [--int8] [--model PATH] [--threads N] [--time N] [--dump-input PATH]
//
// Decodes IMAGE (PNG: libpng, JPEG: libjpeg-turbo; examples/common/image_io.h), resizes and centre-crops
// it as the converter did (examples/scene/convert.py: the constants come from
// the file's "scene.preprocess" metadata), runs the model with tern::Module
// and prints the five most probable classes, one a line:
//
//   index<TAB>label<TAB>probability        (4 decimals; labels: "scene.labels")
//
// --model defaults to out/scene.tern, or out/scene-int8.tern with --int8.
// --threads N: the model's threads (default 0: the physical cores). --time N runs the model N more times and prints the median milliseconds of
// a forward to stderr. --dump-input writes the model's input (float32,
// [1, 3, S, S]) to PATH, for the tests. Errors go to stderr, exit status 1.
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

// The preprocessing the converter used (scene.preprocess).
struct Preprocess {
  int input_size = 0, resize_shorter = 0;
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
};

bool fail(const char* what, const char* path) {
  fprintf(stderr, "scene: %s: %s\n", path, what);
  return false;
}

// ---- preprocessing ------------------------------------------------------------

// Resize (shorter side to resize_shorter, the longer floor-scaled), centre crop
// (top-left at floor((size - input_size) / 2)), (x - mean) / std:
// img -> [1, 3, S, S] floats in `out`. Only the cropped pixels are computed.
void preprocess(const Image& img, const Preprocess& p, std::vector<float>* out) {
  const int64_t r = p.resize_shorter, h = img.height, w = img.width;
  const int rh = static_cast<int>(h <= w ? r : h * r / w);
  const int rw = static_cast<int>(h <= w ? w * r / h : r);
  const int s = p.input_size, top = (rh - s) / 2, left = (rw - s) / 2;
  std::vector<Tap> ty = image_io::bilinear_taps(img.height, rh), tx = image_io::bilinear_taps(img.width, rw);
  out->assign(size_t(3) * s * s, 0.0f);
  for (int y = 0; y < s; ++y) {
    const Tap& a = ty[top + y];
    const uint8_t* row0 = img.rgb.data() + size_t(a.i0) * img.width * 3;
    const uint8_t* row1 = img.rgb.data() + size_t(a.i1) * img.width * 3;
    for (int x = 0; x < s; ++x) {
      const Tap& b = tx[left + x];
      for (int c = 0; c < 3; ++c) {
        float v = a.w0 * (b.w0 * row0[b.i0 * 3 + c] + b.w1 * row0[b.i1 * 3 + c]) +
                  a.w1 * (b.w0 * row1[b.i0 * 3 + c] + b.w1 * row1[b.i1 * 3 + c]);
        (*out)[(size_t(c) * s + y) * s + x] = (v - p.mean[c]) / p.std[c];
      }
    }
  }
}

// ---- the file's metadata ---------------------------------------------------------

bool metadata_text(const tern::Module& module, const char* key, std::string* text) {
  tern::Result<tern::Span<const uint8_t>> blob = module.metadata(key);
  if (!blob.ok()) {
    fprintf(stderr, "scene: %s (is this a scene model? examples/scene/convert.py writes one)\n",
            tern::last_error_message());
    return false;
  }
  text->assign(reinterpret_cast<const char*>(blob->data()), blob->size());
  return true;
}

bool parse_preprocess(const std::string& text, Preprocess* p) {
  size_t pos = 0;
  while (pos < text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    std::string line = text.substr(pos, end - pos);
    pos = end + 1;
    size_t eq = line.find('=');
    if (eq == std::string::npos) continue;
    std::string key = line.substr(0, eq), value = line.substr(eq + 1);
    if (key == "input_size") p->input_size = atoi(value.c_str());
    if (key == "resize_shorter") p->resize_shorter = atoi(value.c_str());
    float* dst = key == "mean" ? p->mean : key == "std" ? p->std : nullptr;
    if (dst != nullptr && sscanf(value.c_str(), "%f,%f,%f", &dst[0], &dst[1], &dst[2]) != 3) return false;
  }
  return p->input_size > 0 && p->resize_shorter >= p->input_size && p->std[0] != 0 && p->std[1] != 0 &&
         p->std[2] != 0;
}

std::vector<std::string> split_lines(const std::string& text) {
  std::vector<std::string> lines;
  size_t pos = 0;
  while (pos <= text.size()) {
    size_t end = text.find('\n', pos);
    if (end == std::string::npos) end = text.size();
    lines.push_back(text.substr(pos, end - pos));
    pos = end + 1;
  }
  return lines;
}

// ---- main ----------------------------------------------------------------------

struct Args {
  const char* image = nullptr;
  const char* model = nullptr;
  const char* dump_input = nullptr;
  bool int8 = false;
  int time_runs = 0;
  int threads = 0;
};

bool parse_args(int argc, char** argv, Args* a) {
  for (int i = 1; i < argc; ++i) {
    std::string s = argv[i];
    if (s == "--int8") {
      a->int8 = true;
    } else if ((s == "--model" || s == "--time" || s == "--threads" || s == "--dump-input") && i + 1 < argc) {
      const char* v = argv[++i];
      if (s == "--model") a->model = v;
      if (s == "--dump-input") a->dump_input = v;
      if (s == "--time") a->time_runs = atoi(v);
      if (s == "--threads") a->threads = atoi(v);
    } else if (s[0] != '-' && a->image == nullptr) {
      a->image = argv[i];
    } else {
      return false;
    }
  }
  if (a->model == nullptr) a->model = a->int8 ? "out/scene-int8.tern" : "out/scene.tern";
  return a->image != nullptr;
}

double median_forward_ms(tern::Module& module, const tern::Tensor& input, int runs) {
  std::vector<double> ms;
  for (int i = 0; i < runs; ++i) {
    auto t0 = std::chrono::steady_clock::now();
    if (!module.forward({&input, 1}).ok()) return -1;
    ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
  }
  std::sort(ms.begin(), ms.end());
  return ms[ms.size() / 2];
}

}  // namespace

int main(int argc, char** argv) {
  Args args;
  if (!parse_args(argc, argv, &args)) {
    fprintf(stderr, "usage: %s IMAGE [--int8] [--model PATH] [--threads N] [--time N] [--dump-input PATH]\n", argv[0]);
    return 2;
  }
  Image img;
  if (!image_io::decode("scene", args.image, &img)) return 1;
  if (img.width <= 0 || img.height <= 0) return fail("empty image", args.image), 1;

  if (tern::register_portable_kernels() != tern::Error::Ok || tern::register_cpu_backend() != tern::Error::Ok) {
    fprintf(stderr, "scene: %s\n", tern::last_error_message());
    return 1;
  }
  tern::Module module;
  if (module.load(args.model, {tern::Module::LoadMode::Mmap, args.threads}) != tern::Error::Ok) {
    fprintf(stderr, "scene: %s: %s\n", args.model, tern::last_error_message());
    return 1;
  }
  std::string labels_text, preprocess_text;
  Preprocess pre;
  if (!metadata_text(module, "scene.labels", &labels_text) ||
      !metadata_text(module, "scene.preprocess", &preprocess_text)) {
    return 1;
  }
  if (!parse_preprocess(preprocess_text, &pre)) {
    fprintf(stderr, "scene: %s: malformed scene.preprocess metadata\n", args.model);
    return 1;
  }
  std::vector<std::string> labels = split_lines(labels_text);

  std::vector<float> x;
  preprocess(img, pre, &x);
  if (args.dump_input != nullptr) {
    FILE* f = fopen(args.dump_input, "wb");
    if (f == nullptr || fwrite(x.data(), sizeof(float), x.size(), f) != x.size()) {
      return fail("cannot write", args.dump_input), 1;
    }
    fclose(f);
  }
  const int64_t s = pre.input_size;
  tern::Tensor input = tern::make_tensor(x.data(), tern::ScalarType::Float32, {1, 3, s, s});
  auto outputs = module.forward({&input, 1});
  if (!outputs.ok()) {
    fprintf(stderr, "scene: %s\n", tern::last_error_message());
    return 1;
  }
  const tern::Tensor& logits = (*outputs)[0];
  if (logits.dtype != tern::ScalarType::Float32 || size_t(logits.numel) != labels.size()) {
    fprintf(stderr, "scene: %s: %lld outputs for %zu labels\n", args.model, (long long)logits.numel, labels.size());
    return 1;
  }
  // Softmax in double, over a copy: the output is valid until the next run.
  std::vector<double> p(logits.data_as<float>(), logits.data_as<float>() + logits.numel);
  const double top = *std::max_element(p.begin(), p.end());
  double sum = 0;
  for (double& v : p) sum += (v = std::exp(v - top));
  std::vector<int> order(p.size());
  for (size_t i = 0; i < order.size(); ++i) order[i] = static_cast<int>(i);
  std::partial_sort(order.begin(), order.begin() + 5, order.end(),
                    [&](int a, int b) { return p[a] > p[b] || (p[a] == p[b] && a < b); });
  for (int k = 0; k < 5; ++k) printf("%d\t%s\t%.4f\n", order[k], labels[order[k]].c_str(), p[order[k]] / sum);

  if (args.time_runs > 0) {
    double ms = median_forward_ms(module, input, args.time_runs);
    if (ms < 0) return fprintf(stderr, "scene: %s\n", tern::last_error_message()), 1;
    fprintf(stderr, "forward_ms_median\t%.3f\n", ms);
  }
  return 0;
}
