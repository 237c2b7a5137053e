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
// quarter slower than the rest. map() takes those faults at load, in one
// call: MADV_POPULATE_WRITE (Linux 5.14), else a zero written to each page
// (the OS has zeroed them already).
// Huge pages (a 2 MiB-aligned block advised MADV_HUGEPAGE) were measured
// and left out: populating mobilenet_v2's arena took 0.6 ms with them
// against 2.8 ms without at the median, but 14 to 34 ms in half of the runs
// on a VM that hands free 2 MiB blocks back to its host (virtio-balloon
// free page reporting), where 4 KiB pages never took more than 6.9 ms.
// The cost moves, it does not grow: the same pages are zeroed either way.
// The memory then stays
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

 private:
  uint8_t* data_ = nullptr;
  size_t size_ = 0;
  size_t mapped_ = 0;  // bytes of the mapping at data_ (whole pages)
};

// The most bytes worth making resident at load: half the physical memory
// (sysconf(_SC_PHYS_PAGES)), or SIZE_MAX where the OS does not say. Module
// prefaults a method's planned arenas, and MmapDataLoader a file, only when
// they fit in it.
size_t prefault_budget_bytes();

}  // namespace tern
