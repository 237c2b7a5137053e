// Seeing every C-level heap allocation of a test executable, for the tests
// that count allocations (no_malloc_test) or make them fail (alloc_failure_test).
//
// Include it in exactly one .cpp of the executable, and define there
//
//   void tern::test::on_c_allocation();   // called on each malloc-family call
//
// Under a sanitizer, which owns the allocator, the sanitizer's allocation hook
// calls it; it then also sees the mallocs of operator new. Otherwise this
// header interposes malloc, calloc, realloc, aligned_alloc, memalign,
// posix_memalign and free, forwarding to glibc's __libc_* entry points. A
// test's own operator new allocates with raw_malloc / raw_memalign (not seen
// by the interposed functions; seen by a sanitizer's hook) and frees with
// raw_free. TERN_TEST_SANITIZER tells the test which of the two it got.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdlib>

#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define TERN_TEST_SANITIZER 1
#elif defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer) || __has_feature(memory_sanitizer)
#define TERN_TEST_SANITIZER 1
#endif
#endif

namespace tern {
namespace test {
void on_c_allocation();
}  // namespace test
}  // namespace tern

#if defined(TERN_TEST_SANITIZER)

extern "C" int __sanitizer_install_malloc_and_free_hooks(void (*malloc_hook)(const volatile void*, size_t),
                                                         void (*free_hook)(const volatile void*));
namespace tern {
namespace test {
namespace heap_hooks_detail {
inline void malloc_hook(const volatile void*, size_t) { on_c_allocation(); }
inline void free_hook(const volatile void*) {}
[[maybe_unused]] inline const int g_installed = __sanitizer_install_malloc_and_free_hooks(malloc_hook, free_hook);
}  // namespace heap_hooks_detail

inline void* raw_malloc(size_t n) { return malloc(n); }
inline void* raw_memalign(size_t alignment, size_t n) {
  void* p = nullptr;
  return posix_memalign(&p, alignment, n) == 0 ? p : nullptr;
}
inline void raw_free(void* p) { free(p); }
}  // namespace test
}  // namespace tern

#else  // glibc

extern "C" {
void* __libc_malloc(size_t);
void* __libc_calloc(size_t, size_t);
void* __libc_realloc(void*, size_t);
void* __libc_memalign(size_t, size_t);
void __libc_free(void*);

void* malloc(size_t n) {
  tern::test::on_c_allocation();
  return __libc_malloc(n);
}
void* calloc(size_t n, size_t size) {
  tern::test::on_c_allocation();
  return __libc_calloc(n, size);
}
void* realloc(void* p, size_t n) {
  tern::test::on_c_allocation();
  return __libc_realloc(p, n);
}
void free(void* p) { __libc_free(p); }
void* aligned_alloc(size_t alignment, size_t n) {
  tern::test::on_c_allocation();
  return __libc_memalign(alignment, n);
}
void* memalign(size_t alignment, size_t n) {
  tern::test::on_c_allocation();
  return __libc_memalign(alignment, n);
}
int posix_memalign(void** out, size_t alignment, size_t n) {
  tern::test::on_c_allocation();
  if (alignment % sizeof(void*) != 0 || (alignment & (alignment - 1)) != 0) return EINVAL;
  void* p = __libc_memalign(alignment, n);
  if (p == nullptr) return ENOMEM;
  *out = p;
  return 0;
}
}  // extern "C"

namespace tern {
namespace test {
inline void* raw_malloc(size_t n) { return __libc_malloc(n); }
inline void* raw_memalign(size_t alignment, size_t n) { return __libc_memalign(alignment, n); }
inline void raw_free(void* p) { __libc_free(p); }
}  // namespace test
}  // namespace tern

#endif
