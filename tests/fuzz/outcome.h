// What a harness did with one input, for replay_main.cpp to compare with
// tests/fuzz/regressions/MANIFEST.txt:
//   "refused <step> <Error>"  the first step that returned an error (its message kept)
//   "ran"                     nothing refused, and the harness's last step
//                             (execute, forward, read_npy_buffer, ...) completed at least once
//   "skipped <why>"           nothing refused or completed: the harness itself left the
//                             input out (over its caps, or what the bindings refuse)
// The harnesses record as they go; a libFuzzer build records too (no
// allocation) and nothing reads it.
#pragma once

#include <cstdio>
#include <cstring>

#include "runtime/core/error.h"
#include "runtime/core/log.h"

namespace tern {
namespace fuzz {

struct Outcome {
  const char* step = nullptr;  // "Program::load", "Method::load", "set_input", "execute", ...; nullptr: none refused
  Error error = Error::Ok;
  char message[256] = "";
  const char* skipped = nullptr;  // the first harness-side skip
  bool completed = false;         // the harness's last step returned Ok at least once
};

inline Outcome& outcome() {
  static Outcome o;
  return o;
}

inline void reset_outcome() { outcome() = Outcome{}; }

// A step returned `e`: recorded if it is the first refusal. Returns e.
inline Error record(const char* step, Error e) {
  Outcome& o = outcome();
  if (e != Error::Ok && o.step == nullptr) {
    o.step = step, o.error = e;
    snprintf(o.message, sizeof(o.message), "%s", last_error_message());
  }
  return e;
}

inline void record_completed() { outcome().completed = true; }

inline void record_skip(const char* why) {
  if (outcome().skipped == nullptr) outcome().skipped = why;
}

// "refused <step> <Error>", "skipped <why>" or "ran".
inline void describe_outcome(char* out, size_t n) {
  const Outcome& o = outcome();
  if (o.step != nullptr) {
    snprintf(out, n, "refused %s %s", o.step, error_name(o.error));
  } else if (!o.completed && o.skipped != nullptr) {
    snprintf(out, n, "skipped %s", o.skipped);
  } else if (o.completed) {
    snprintf(out, n, "ran");
  } else {
    snprintf(out, n, "nothing: no step refused, completed or skipped");
  }
}

}  // namespace fuzz
}  // namespace tern
