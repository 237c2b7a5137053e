// PageMemory: a block of anonymous memory straight from the OS, ready for
// use: what Module gives a method for each planned arena.
//
//   tern::PageMemory arena;
//   if (arena.map(bytes) != tern::Error::Ok) { ... }   // logged: OutOfMemory
//   uint8_t* p = arena.data();                           // page-aligned, zeroed, resident
//
// Why not the heap: memory from malloc (or from mmap, which malloc uses for
// large blocks) is mapped lazily, page by page, the first time it is
// written. For planned arenas that first write is the first execute(): it
// took one page fault per 4 KiB of activations (about 1,800 for
// mobilenet_v2's 7.4 MB), which made the first run after load about a
// quarter slower than the rest. map() takes those faults at load, where
// they are cheaper in bulk:
//   - on Linux, a block of at least kHugePageBytes is aligned to a huge page
//     and advised MADV_HUGEPAGE, so where the OS has transparent huge pages
//     (enabled = always or madvise) its whole 2 MiB parts are mapped 512
//     pages at a time (the tail past the last whole one gets small pages:
//     no memory is spent on rounding up);
//   - every page is then made resident: MADV_POPULATE_WRITE (Linux 5.14),
//     else a zero written to each page (the OS has zeroed them already).
// The cost moves, it does not grow: the same pages are zeroed either way,
// and with huge pages fewer faults are taken at all. The memory then stays
// resident (counted in RSS) from load on, all of it: where a run writes only
// part of an arena, that costs memory (mobilenet_v2's runs write 70% of its
// 7.4 MB arena's pages: 2.1 MB more RSS; resnet18's write all of theirs).
// The sizes come from an untrusted file, so a caller prefaults only up to
// prefault_budget_bytes() (a corrupted arena size of many GB is then mapped
// lazily, as malloc would have, and not made resident at once).
//
// On systems without mmap (not POSIX) map() takes the block from the heap,
// 64-byte aligned, and zeroes it.
//
// Ownership: the block is the object's until unmap() or destruction. Not
// copyable; movable. Thread safety: none (one owner).
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/error.h"

namespace tern {

class PageMemory {
 public:
  // Blocks of at least this many bytes get huge pages advised (where the
  // platform has the advice): the usual transparent huge page of x86-64 and
  // arm64 Linux with 4 KiB pages.
  static constexpr size_t kHugePageBytes = size_t(2) << 20;

  PageMemory() = default;
  ~PageMemory() { unmap(); }
  PageMemory(const PageMemory&) = delete;
  PageMemory& operator=(const PageMemory&) = delete;
  PageMemory(PageMemory&& other) noexcept;
  PageMemory& operator=(PageMemory&& other) noexcept;

  // Maps `bytes` (0 is taken as 1) of zeroed memory as described above
  // (prefault false: without making it resident); the block previously held
  // is unmapped first. OutOfMemory (logged with the size and the OS error)
  // when the OS refuses; the object is then empty.
  Error map(size_t bytes, bool prefault = true);
  void unmap();

  uint8_t* data() const { return data_; }
  // The bytes asked for, as given to map() (the mapping itself is whole pages).
  size_t size() const { return size_; }
  // Whether map() advised huge pages for this block (the OS may still give
  // small ones: it decides by its settings and free memory).
  bool huge_pages_advised() const { return huge_; }

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // bytes of the mapping at data_ (whole pages)
  bool huge_ = false;
};

// The most bytes worth making resident at load: half the physical memory
// (sysconf(_SC_PHYS_PAGES)), or SIZE_MAX where the OS does not say. Module
// prefaults a method's planned arenas, and MmapDataLoader a file, only when
// they fit in it.
size_t prefault_budget_bytes();

}  // namespace tern
