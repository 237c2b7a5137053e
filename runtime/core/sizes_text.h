// A tensor's sizes as text for error messages, without allocating:
//
//   char buf[96];
//   TERN_LOG_ERROR("input 0 must be %s", sizes_text(t.sizes, t.dim, buf, sizeof(buf)));   // "[1, 3, 224, 224]"
#pragma once

#include <cstddef>
#include <cstdint>

namespace tern {

// "[1, 3, 224, 224]" into buf (cut short as "...]" when it does not fit;
// size >= 5); returns buf.
const char* sizes_text(const int64_t* sizes, int dim, char* buf, size_t size);

}  // namespace tern
