// Image files for the applications: see image_io.h.
#include "examples/common/image_io.h"

#include <algorithm>
#include <cerrno>
#include <csetjmp>
#include <cstdio>
#include <cstring>

#include <jpeglib.h>
#include <png.h>

namespace image_io {
namespace {

// The program named in messages; the apps are single-threaded.
const char* g_prog = "image_io";

bool fail(const char* what, const char* path) {
  fprintf(stderr, "%s: %s: %s\n", g_prog, path, what);
  return false;
}

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
  fprintf(stderr, "%s: PNG: %s\n", g_prog, msg);
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
  fprintf(stderr, "%s: JPEG: %s\n", g_prog, msg);
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

// What write_png owns across setjmp: filled before it, only read after.
struct PngWriter {
  FILE* file;
  std::vector<png_const_bytep> rows;
};

}  // namespace

bool decode(const char* prog, const char* path, Image* img) {
  g_prog = prog;
  std::vector<uint8_t> bytes;
  if (!read_file(path, &bytes)) return false;
  static const uint8_t kPng[8] = {0x89, 'P', 'N', 'G', '\r', '\n', 0x1a, '\n'};
  if (bytes.size() >= 8 && memcmp(bytes.data(), kPng, 8) == 0) return decode_png(bytes, path, img);
  if (bytes.size() >= 3 && bytes[0] == 0xff && bytes[1] == 0xd8 && bytes[2] == 0xff) {
    return decode_jpeg(bytes, path, img);
  }
  return fail("not a PNG or JPEG file", path);
}

bool write_png(const char* prog, const char* path, int width, int height, int channels, const uint8_t* pixels) {
  g_prog = prog;
  static const int kColor[5] = {-1, PNG_COLOR_TYPE_GRAY, -1, PNG_COLOR_TYPE_RGB, PNG_COLOR_TYPE_RGB_ALPHA};
  if (width <= 0 || height <= 0 || channels < 1 || channels > 4 || kColor[channels] < 0) {
    return fail("cannot write a PNG of this shape", path);
  }
  PngWriter writer{fopen(path, "wb"), {}};
  if (writer.file == nullptr) return fail(strerror(errno), path);
  for (int y = 0; y < height; ++y) writer.rows.push_back(pixels + size_t(y) * width * channels);
  png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, nullptr, png_fail, png_warn);
  png_infop info = png ? png_create_info_struct(png) : nullptr;
  if (info == nullptr) {
    fclose(writer.file);
    return fail("out of memory", path);
  }
  if (setjmp(png_jmpbuf(png))) {
    png_destroy_write_struct(&png, &info);
    fclose(writer.file);
    return fail("cannot write the PNG image", path);
  }
  png_init_io(png, writer.file);
  png_set_IHDR(png, info, static_cast<png_uint_32>(width), static_cast<png_uint_32>(height), 8, kColor[channels],
               PNG_INTERLACE_NONE, PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
  png_write_info(png, info);
  png_write_image(png, const_cast<png_bytepp>(writer.rows.data()));
  png_write_end(png, nullptr);
  png_destroy_write_struct(&png, &info);
  if (fclose(writer.file) != 0) return fail(strerror(errno), path);
  return true;
}

std::vector<Tap> bilinear_taps(int in, int out) {
  std::vector<Tap> t(out);
  const float scale = float(in) / float(out);
  for (int o = 0; o < out; ++o) {
    const float src = std::max(scale * (float(o) + 0.5f) - 0.5f, 0.0f);
    const int i0 = std::min(static_cast<int>(src), in - 1);
    t[o] = {i0, i0 + (i0 < in - 1 ? 1 : 0), 1.0f - (src - float(i0)), src - float(i0)};
  }
  return t;
}

}  // namespace image_io
