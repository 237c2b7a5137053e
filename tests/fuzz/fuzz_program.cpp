// Harness (a): Program::load on untrusted bytes, then everything an
// application may ask of a loaded Program before it loads a method: names,
// MethodMeta (inputs, outputs, dim ranges, arenas, operators, delegates),
// segments, producer.
#include "fuzz_util.h"

using namespace tern;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  fuzz::FuzzInput input(data, size);
  const Program* program = input.program();
  if (program == nullptr) return 0;
  fuzz::record_completed();
  static volatile uint64_t sink = 0;
  uint64_t s = strlen(program->producer());
  for (size_t i = 0; i < program->num_segments(); ++i) {
    const uint8_t* seg = program->segment_data(i);
    const uint64_t n = program->segment_size(i);
    if (n) s += seg[0] + seg[n - 1];
  }
  for (size_t k = 0; k < program->num_methods(); ++k) {
    const char* name = program->method_name(k);
    Result<MethodMeta> meta = program->method_meta(name);
    if (!meta.ok()) continue;
    s += strlen(meta->name()) + meta->num_instructions();
    for (size_t i = 0; i < meta->num_inputs(); ++i) {
      Result<TensorInfo> t = meta->input(i);
      if (!t.ok()) continue;
      s += t->nbytes();
      for (int d = 0; d < t->dim(); ++d) {
        Result<DimRange> r = meta->input_dim_range(i, d);
        if (r.ok()) s += static_cast<uint64_t>(r->max - r->min) + strlen(r->symbol);
      }
    }
    for (size_t i = 0; i < meta->num_outputs(); ++i) {
      Result<TensorInfo> t = meta->output(i);
      if (t.ok()) s += t->numel();
    }
    for (size_t i = 0; i < meta->num_arenas(); ++i) s += *meta->arena_size(i);
    for (size_t i = 0; i < meta->num_operators(); ++i) {
      s += strlen(meta->operator_name(i)) + strlen(meta->operator_overload(i));
    }
    for (size_t i = 0; i < meta->num_delegates(); ++i) s += strlen(meta->delegate_backend(i));
  }
  sink = sink + s;
  return 0;
}
