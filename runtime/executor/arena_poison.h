// Planned arenas under AddressSanitizer. Internal to runtime/executor.
//
// Why: a method's planned arenas are one application buffer each, with the
// planned tensors at the offsets the exporter chose and bytes between and
// after them that no tensor owns (alignment padding, the round-up of the
// buffer, room a crafted plan leaves). A kernel that reads or writes past
// its tensor lands there silently: ASan sees one valid heap block. So in
// ASan builds Method::load poisons every byte of each planned arena that no
// planned tensor covers (the complement of the union of the tensors'
// planned ranges; a tensor's planned range is its file sizes, the upper
// bound of a dynamic one; aliases and state included), and the access is
// reported where it happens. ~Method unpoisons the arenas: the application
// owns the memory and may reuse it (a stack or static buffer would otherwise
// stay poisoned).
//
// How: poison the whole arena, then unpoison each planned tensor's range.
// ASan tracks 8-byte granules whose addressable bytes are a prefix, so a
// granule that a gap shares with the start of a tensor stays addressable:
// a miss of up to 7 bytes there, never a false report.
//
// Other builds: kPoisonArenas is false, the functions are empty, and nothing
// of this is in the core.
#pragma once

#include <cstddef>

#if defined(__SANITIZE_ADDRESS__)
#define TERN_POISON_ARENAS 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
#define TERN_POISON_ARENAS 1
#endif
#endif

#ifdef TERN_POISON_ARENAS
#include <sanitizer/asan_interface.h>
#endif

namespace tern {

#ifdef TERN_POISON_ARENAS
constexpr bool kPoisonArenas = true;
inline void poison_bytes(const void* p, size_t n) { __asan_poison_memory_region(p, n); }
inline void unpoison_bytes(const void* p, size_t n) { __asan_unpoison_memory_region(p, n); }
#else
constexpr bool kPoisonArenas = false;
inline void poison_bytes(const void*, size_t) {}
inline void unpoison_bytes(const void*, size_t) {}
#endif

}  // namespace tern
