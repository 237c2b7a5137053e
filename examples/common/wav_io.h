// WAV files for the audio applications (examples/vad, examples/denoise):
// reading and writing 16-bit PCM mono RIFF/WAVE. Not part of the runtime: it
// uses the heap and the C library.
//
//   std::vector<float> x;
//   if (!wav_io::read("vad", path, 16000, &x)) return 1;   // the reason is on stderr
//   wav_io::write("denoise", "out.wav", 48000, y);
//
// Every failure prints "<prog>: <path>: <reason>" on stderr and returns
// false: another rate (with the sox line that converts it), another sample
// format, a truncated or malformed file, strerror().
#pragma once

#include <vector>

namespace wav_io {

// A RIFF/WAVE file of 16-bit PCM, mono, at `rate` Hz, as int16 / 32768.
bool read(const char* prog, const char* path, int rate, std::vector<float>* samples);

// 16-bit PCM mono at `rate` Hz; samples clipped to [-1, 1) and rounded.
bool write(const char* prog, const char* path, int rate, const std::vector<float>& samples);

}  // namespace wav_io
