// ChromeTrace: records a Method's instructions as they run (through
// Method::set_event_hook) and writes them as a Chrome trace (JSON) that
// Perfetto (ui.perfetto.dev) and chrome://tracing open: one complete ("X")
// event per instruction and per backend call, named by op or backend, with
// the torch.export node in its args, nested under one event per run; inside
// a backend call, one event per step the backend reports (the cpu backend:
// each fused op, "Conv: convolution_3+relu_2"); and one instant event per
// delegate ("cat": "delegate") whose args name its backend, kernel sets
// and microkernels (Method::delegate_details). print_profile() sums the
// same events by op: what tern-run --profile prints.
//
//   ChromeTrace trace(*method, /*runs=*/20);   // reserves every event up front
//   trace.begin_run();  module.run(...);  trace.end_run();
//   trace.write("out.json", "tern-run model.tern");
//
// Recording allocates nothing (events beyond the reserve are counted and
// dropped), so a traced run keeps execute()'s no-heap rule. Not thread-safe.
#pragma once

#include <chrono>
#include <cstdio>
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "runtime/executor/method.h"

namespace tern {

// Delegate i's Method::delegate_details as (key, value) pairs, in order
// ("float" -> "avx2", "float.igemm_main" -> "f32_igemm_ukernel_6x16__avx2").
std::vector<std::pair<std::string, std::string>> delegate_detail_pairs(const Method& method, size_t i);

class ChromeTrace {
 public:
  ChromeTrace(Method& method, size_t runs);
  ~ChromeTrace();  // detaches from the method
  ChromeTrace(const ChromeTrace&) = delete;
  ChromeTrace& operator=(const ChromeTrace&) = delete;

  void begin_run();
  void end_run();

  // Writes the JSON file; false (with errno set) if it cannot be written.
  bool write(const char* path, const char* process_name) const;
  // Prints time per op (kernels by ATen op, backend steps by kind) over the
  // recorded runs, and the slowest backend steps.
  void print_profile(FILE* out) const;
  size_t num_events() const { return events_.size(); }
  size_t dropped() const { return dropped_; }

 private:
  struct Event {
    int64_t begin_ns, end_ns;
    uint32_t instruction;  // UINT32_MAX: a whole run
    uint32_t run;
    const char* step;      // a backend's step inside `instruction`, or nullptr
  };
  static void hook(void* self, size_t instruction, bool begin);
  static void step(void* self, const char* name, bool begin);
  int64_t now_ns() const;

  Method& method_;
  std::chrono::steady_clock::time_point t0_;
  std::vector<Event> events_;
  StepSink steps_;
  size_t open_ = SIZE_MAX;       // the event of the instruction being timed
  size_t open_step_ = SIZE_MAX;  // the event of the backend step being timed
  size_t run_start_ = 0;
  uint32_t runs_ = 0;
  size_t dropped_ = 0;
};

}  // namespace tern
