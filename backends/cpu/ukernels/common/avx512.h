// Lane masks for a loop's last, partial vector, shared by the files built
// with AVX-512 (ukernels/avx512/, avx512vnni/, amx/; include it from those
// only). In an unnamed namespace, as every header of ukernels/common/: each
// file gets its own copy, compiled with that file's flags. An inline
// function of external linkage would be one symbol for the linker, which
// keeps one file's copy for all of them: built for a larger ISA than the
// caller's CPU has, or for a smaller one than the caller was meant to use.
#pragma once

#include <immintrin.h>

#include <cstddef>

namespace tern {
namespace cpu {
namespace {

// Lanes below n of 16 (all of them from n = 16 on).
inline __mmask16 tail_mask(size_t n) { return n >= 16 ? __mmask16(0xFFFF) : __mmask16((1u << n) - 1); }

// Lanes below n of 64 (all of them from n = 64 on), for byte vectors (AVX-512 BW).
inline __mmask64 tail_mask64(size_t n) { return n >= 64 ? ~__mmask64(0) : (__mmask64(1) << n) - 1; }

}  // namespace
}  // namespace cpu
}  // namespace tern
