// Scene recognition (issue 25): EfficientNet-Lite0 (ImageNet) on a photo.
//
//   build/examples/scene IMAGE [--int8] [--model PATH] [--threads N] [--time N] [--dump-input PATH]
//
// Decodes IMAGE (PNG: libpng, JPEG: libjpeg-turbo), resizes and centre-crops
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
#include <csetjmp>
#include <cstdio>
#include <cstdlib>
#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include <jpeglib.h>
#include <png.h>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3]
};

// The preprocessing the converter used (scene.preprocess).
struct Preprocess {
  int input_size = 0, resize_shorter = 0;
  float mean[3] = {0, 0, 0}, std[3] = {1, 1, 1};
};

bool fail(const char* what, const char* path) {
  fprintf(stderr, "scene: %s: %s\n", path, what);
  return false;
}

// ---- decoding ---------------------------------------------------------------

bool read_file(const char* path, std::vector<uint8_t>* bytes) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return fail(strerror(errno), path);
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) bytes->insert(bytes->end(), buf, buf + n);
  fclose(f);
  return true;
}

// Everything decode_png changes after setjmp lives here, in memory, so a
// longjmp back (png_fail) finds it as it was left.
struct PngReader {
  const std::vector<uint8_t>* bytes;
  size_t pos;
  std::vector<png_bytep> rows;
};

void png_read_bytes(png_structp png, png_bytep out, png_size_t n) {
  auto* r = static_cast<PngReader*>(png_get_io_ptr(png));
  if (n > r->bytes->size() - r->pos) png_error(png, "truncated file");
  memcpy(out, r->bytes->data() + r->pos, n);
  r->pos += n;
}

void png_warn(png_structp, png_const_charp) {}

void png_fail(png_structp png, png_const_charp msg) {
  fprintf(stderr, "scene: PNG: %s\n", msg);
  png_longjmp(png, 1);
}

// Any PNG (grey, palette, 16 bits, alpha) as 8-bit RGB; the alpha is dropped.
bool decode_png(const std::vector<uint8_t>& bytes, const char* path, Image* img) {
  png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, nullptr, png_fail, png_warn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) return fail("out of memory", path);
  PngReader reader{&bytes, 0, {}};
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_read_struct(&png, &info, nullptr);
    return fail("not a valid PNG image", path);
  }
  png_set_read_fn(png, &reader, png_read_bytes);
  png_read_info(png, info);
  png_set_expand(png);
  png_set_strip_16(png);
  png_set_strip_alpha(png);
  png_set_gray_to_rgb(png);
  png_set_interlace_handling(png);
  png_read_update_info(png, info);
  img->width = static_cast<int>(png_get_image_width(png, info));
  img->height = static_cast<int>(png_get_image_height(png, info));
  if (png_get_rowbytes(png, info) != size_t(img->width) * 3) png_error(png, "unexpected row layout");
  img->rgb.resize(size_t(img->width) * img->height * 3);
  for (int y = 0; y < img->height; ++y) reader.rows.push_back(img->rgb.data() + size_t(y) * img->width * 3);
  png_read_image(png, reader.rows.data());
  png_read_end(png, nullptr);
  png_destroy_read_struct(&png, &info, nullptr);
  return true;
}

struct JpegError {
  jpeg_error_mgr mgr;
  jmp_buf jump;
};

void jpeg_fail(j_common_ptr cinfo) {
  char msg[JMSG_LENGTH_MAX];
  (*cinfo->err->format_message)(cinfo, msg);
  fprintf(stderr, "scene: JPEG: %s\n", msg);
  longjmp(reinterpret_cast<JpegError*>(cinfo->err)->jump, 1);
}

// libjpeg-turbo's defaults (islow IDCT, fancy upsampling), as Pillow decodes.
bool decode_jpeg(const std::vector<uint8_t>& bytes, const char* path, Image* img) {
  jpeg_decompress_struct cinfo;
  JpegError err;
  cinfo.err = jpeg_std_error(&err.mgr);
  err.mgr.error_exit = jpeg_fail;
  err.mgr.output_message = [](j_common_ptr) {};
  if (setjmp(err.jump)) {
    jpeg_destroy_decompress(&cinfo);
    return fail("not a valid JPEG image", path);
  }
  jpeg_create_decompress(&cinfo);
  jpeg_mem_src(&cinfo, bytes.data(), static_cast<unsigned long>(bytes.size()));
  jpeg_read_header(&cinfo, TRUE);
  cinfo.out_color_space = JCS_RGB;
  jpeg_start_decompress(&cinfo);
  img->width = static_cast<int>(cinfo.output_width);
  img->height = static_cast<int>(cinfo.output_height);
  img->rgb.resize(size_t(img->width) * img->height * 3);
  while (cinfo.output_scanline < cinfo.output_height) {
    JSAMPROW row = img->rgb.data() + size_t(cinfo.output_scanline) * img->width * 3;
    jpeg_read_scanlines(&cinfo, &row, 1);
  }
  jpeg_finish_decompress(&cinfo);
  jpeg_destroy_decompress(&cinfo);
  return true;
}

bool decode(const char* path, Image* img) {
  std::vector<uint8_t> bytes;
  if (!read_file(path, &bytes)) return false;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes, path, img);
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
    return decode_jpeg(bytes, path, img);
  }
  return fail("not a PNG or JPEG file", path);
}

// ---- preprocessing ------------------------------------------------------------

// Source index and weights of one output coordinate: torch's bilinear with
// half-pixel centres (align_corners=False, no antialias), scale = in / out.
struct Tap {
  int i0, i1;
  float w0, w1;
};

std::vector<Tap> taps(int in, int out) {
  std::vector<Tap> t(out);
  const float scale = float(in) / float(out);
  for (int o = 0; o < out; ++o) {
    float src = std::max(scale * (float(o) + 0.5f) - 0.5f, 0.0f);
    int i0 = std::min(static_cast<int>(src), in - 1);
    t[o].i0 = i0;
    t[o].i1 = i0 + (i0 < in - 1 ? 1 : 0);
    t[o].w1 = src - float(i0);
    t[o].w0 = 1.0f - t[o].w1;
  }
  return t;
}

// Resize (shorter side to resize_shorter, the longer floor-scaled), centre crop
// (top-left at floor((size - input_size) / 2)), (x - mean) / std:
// img -> [1, 3, S, S] floats in `out`. Only the cropped pixels are computed.
void preprocess(const Image& img, const Preprocess& p, std::vector<float>* out) {
  const int64_t r = p.resize_shorter, h = img.height, w = img.width;
  const int rh = static_cast<int>(h <= w ? r : h * r / w);
  const int rw = static_cast<int>(h <= w ? w * r / h : r);
  const int s = p.input_size, top = (rh - s) / 2, left = (rw - s) / 2;
  std::vector<Tap> ty = taps(img.height, rh), tx = taps(img.width, rw);
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
  if (!decode(args.image, &img)) return 1;
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
