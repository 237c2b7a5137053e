// Image files for the applications (examples/scene, examples/cutout):
// decoding PNG (libpng) and JPEG (libjpeg-turbo) to 8-bit RGB, writing
// 8-bit PNGs, and torch's bilinear resize taps. Not part of the runtime: it uses the heap and the C library.
//
//   image_io::Image img;
//   if (!image_io::decode("scene", path, &img)) return 1;   // the reason is on stderr
//   image_io::write_png("cutout", "out.png", w, h, 4, rgba.data());
//
// Every failure prints "<prog>: <path>: <reason>" on stderr and returns
// false ("not a valid PNG image", "not a PNG or JPEG file", strerror()).
#pragma once

#include <cstdint>
#include <vector>

namespace image_io {

struct Image {
  int width = 0, height = 0;
  std::vector<uint8_t> rgb;  // [height, width, 3]
};

// Any PNG (grey, palette, 16 bits, alpha: the alpha is dropped) or JPEG
// (libjpeg-turbo's defaults: islow IDCT, fancy upsampling, as Pillow decodes)
// as 8-bit RGB, chosen by the file's first bytes.
bool decode(const char* prog, const char* path, Image* img);

// An 8-bit PNG of `channels` 1 (grey), 3 (RGB) or 4 (RGBA) from
// [height, width, channels] pixels.
bool write_png(const char* prog, const char* path, int width, int height, int channels, const uint8_t* pixels);

// Source indices and weights of one output coordinate of a resize from `in`
// to `out`: torch's bilinear interpolation with half-pixel centres
// (align_corners=False, no antialias), scale in / out. Output o reads
// w0 * x[i0] + w1 * x[i1].
struct Tap {
  int i0, i1;
  float w0, w1;
};
std::vector<Tap> bilinear_taps(int in, int out);

}  // namespace image_io
