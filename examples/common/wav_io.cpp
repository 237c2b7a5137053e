#include "examples/common/wav_io.h"

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <string>

namespace wav_io {
namespace {

bool fail(const char* prog, const std::string& what) {
  fprintf(stderr, "%s: %s\n", prog, what.c_str());
  return false;
}

uint32_t le32(const uint8_t* p) { return p[0] | p[1] << 8 | p[2] << 16 | uint32_t(p[3]) << 24; }
uint16_t le16(const uint8_t* p) { return uint16_t(p[0] | p[1] << 8); }

void put32(std::vector<uint8_t>* b, uint32_t v) {
  for (int i = 0; i < 4; ++i) b->push_back(uint8_t(v >> (8 * i)));
}
void put16(std::vector<uint8_t>* b, uint16_t v) {
  b->push_back(uint8_t(v));
  b->push_back(uint8_t(v >> 8));
}

}  // namespace

bool read(const char* prog, const char* path, int rate, std::vector<float>* samples) {
  FILE* f = fopen(path, "rb");
  if (f == nullptr) return fail(prog, std::string(path) + ": " + strerror(errno));
  std::vector<uint8_t> b;
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, f)) > 0) b.insert(b.end(), buf, buf + n);
  fclose(f);
  const std::string name(path);
  if (b.size() < 12 || memcmp(b.data(), "RIFF", 4) != 0 || memcmp(b.data() + 8, "WAVE", 4) != 0)
    return fail(prog, name + ": not a WAV file (no RIFF/WAVE header)");
  bool have_fmt = false;
  for (size_t pos = 12; pos + 8 <= b.size();) {
    const uint8_t* h = b.data() + pos;
    const size_t size = le32(h + 4), body = pos + 8;
    if (size > b.size() - body) return fail(prog, name + ": truncated WAV chunk");
    if (memcmp(h, "fmt ", 4) == 0) {
      if (size < 16) return fail(prog, name + ": fmt chunk too short");
      const uint16_t format = le16(h + 8), channels = le16(h + 10), bits = le16(h + 22);
      const uint32_t hz = le32(h + 12);
      // WAVE_FORMAT_EXTENSIBLE (0xFFFE) carries its real format in a GUID; its first two bytes.
      const uint16_t real = format == 0xFFFE && size >= 26 ? le16(h + 32) : format;
      if (hz != uint32_t(rate))
        return fail(prog, name + ": sample rate " + std::to_string(hz) + " Hz; the model takes " +
                              std::to_string(rate) + " Hz (resample it first, e.g. sox IN -r " +
                              std::to_string(rate) + " -c 1 -b 16 OUT.wav)");
      if (real != 1 || bits != 16 || channels != 1)
        return fail(prog, name + ": " + std::to_string(channels) + " channel(s), " + std::to_string(bits) +
                              "-bit, format " + std::to_string(real) +
                              "; need mono 16-bit PCM (e.g. sox IN -c 1 -b 16 OUT.wav)");
      have_fmt = true;
    } else if (memcmp(h, "data", 4) == 0) {
      if (!have_fmt) return fail(prog, name + ": data chunk before the fmt chunk");
      samples->resize(size / 2);
      for (size_t i = 0; i < samples->size(); ++i)
        (*samples)[i] = float(int16_t(le16(b.data() + body + 2 * i))) / 32768.0f;
      return true;
    }
    pos = body + size + (size & 1);  // chunks are padded to even sizes
  }
  return fail(prog, name + ": no " + std::string(have_fmt ? "data" : "fmt") + " chunk");
}

bool write(const char* prog, const char* path, int rate, const std::vector<float>& samples) {
  std::vector<uint8_t> b;
  const uint32_t data = uint32_t(samples.size() * 2);
  b.insert(b.end(), {'R', 'I', 'F', 'F'});
  put32(&b, 36 + data);
  b.insert(b.end(), {'W', 'A', 'V', 'E', 'f', 'm', 't', ' '});
  put32(&b, 16);
  put16(&b, 1);  // PCM
  put16(&b, 1);  // mono
  put32(&b, uint32_t(rate));
  put32(&b, uint32_t(rate) * 2);
  put16(&b, 2);
  put16(&b, 16);
  b.insert(b.end(), {'d', 'a', 't', 'a'});
  put32(&b, data);
  for (float x : samples) {
    const float v = std::nearbyint(std::min(32767.0f, std::max(-32768.0f, x * 32768.0f)));
    put16(&b, uint16_t(int16_t(v)));
  }
  FILE* f = fopen(path, "wb");
  if (f == nullptr) return fail(prog, std::string(path) + ": " + strerror(errno));
  const bool ok = fwrite(b.data(), 1, b.size(), f) == b.size();
  return fclose(f) == 0 && ok ? true : fail(prog, std::string(path) + ": write failed");
}

}  // namespace wav_io
