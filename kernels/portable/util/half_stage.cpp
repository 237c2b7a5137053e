#include "kernels/portable/util/half_stage.h"

#include <cstring>
#include <new>

#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

constexpr size_t kMaxStagedArgs = 16;

bool is_half(const EValue& v) {
  return v.is_tensor() &&
         (v.tensor.dtype == ScalarType::Float16 || v.tensor.dtype == ScalarType::BFloat16);
}

// In persistent memory; ctx.state() holds a pointer to it.
struct Staged {
  RunFn inner_run;
  alignas(16) unsigned char inner_state[PrepareContext::kStateBytes];
  uint32_t num_args;
  uint32_t first_out;
  bool staged[kMaxStagedArgs];
  ConvertFn to_f32[kMaxStagedArgs];    // 16-bit -> float32 (inputs)
  ConvertFn from_f32[kMaxStagedArgs];  // float32 -> 16-bit (outs)
  EValue shadow[kMaxStagedArgs];       // the float32 views given to inner
  EValue* args[kMaxStagedArgs];        // what inner's run sees
};

size_t round64(size_t n) { return (n + 63) & ~size_t(63); }

Error staged_run(RunContext& ctx, EValue* const* args) {
  Staged* s;
  memcpy(&s, ctx.state(), sizeof s);
  for (uint32_t i = 0; i < s->num_args; ++i) {
    if (!s->staged[i]) {
      s->args[i] = args[i];
      continue;
    }
    const Tensor& t = args[i]->tensor;
    if (i < s->first_out) s->to_f32[i](t.data, s->shadow[i].tensor.data, t.numel);
  }
  RunContext inner = ctx.with_state(s->inner_state);
  TERN_CHECK_OK(s->inner_run(inner, s->args));
  for (uint32_t i = s->first_out; i < s->num_args; ++i) {
    if (s->staged[i]) s->from_f32[i](s->shadow[i].tensor.data, args[i]->tensor.data, args[i]->tensor.numel);
  }
  return Error::Ok;
}

}  // namespace

Error prepare_staged(PrepareContext& ctx, Span<EValue* const> args, PrepareFn inner,
                     size_t num_outputs) {
  bool any = false;
  for (size_t i = 0; i < args.size(); ++i) any = any || is_half(*args[i]);
  if (!any) return inner(ctx, args);
  if (args.size() > kMaxStagedArgs || num_outputs > args.size()) {
    return ctx.fail(Error::OperatorMissing, "float16/bfloat16: %zu arguments, staging takes at most %zu",
                    args.size(), kMaxStagedArgs);
  }
  size_t bytes = round64(sizeof(Staged));
  for (size_t i = 0; i < args.size(); ++i) {
    if (is_half(*args[i])) bytes += round64(static_cast<size_t>(args[i]->tensor.numel) * sizeof(float));
  }
  void* mem = ctx.allocate(bytes);
  if (mem == nullptr) return Error::OutOfMemory;
  Staged* s = new (mem) Staged();
  s->num_args = static_cast<uint32_t>(args.size());
  s->first_out = static_cast<uint32_t>(args.size() - num_outputs);
  unsigned char* buf = static_cast<unsigned char*>(mem) + round64(sizeof(Staged));
  for (size_t i = 0; i < args.size(); ++i) {
    s->args[i] = args[i];
    if (!is_half(*args[i])) continue;
    const Tensor& t = args[i]->tensor;
    s->staged[i] = true;
    s->to_f32[i] = select_convert(t.dtype, ScalarType::Float32);
    s->from_f32[i] = select_convert(ScalarType::Float32, t.dtype);
    s->shadow[i] = *args[i];
    s->shadow[i].tensor.dtype = ScalarType::Float32;
    s->shadow[i].tensor.data = buf;
    // A prepare may read constant inputs (e.g. to pack weights): give it their values.
    if (i < s->first_out && t.data != nullptr) s->to_f32[i](t.data, buf, t.numel);
    buf += round64(static_cast<size_t>(t.numel) * sizeof(float));
    s->args[i] = &s->shadow[i];
  }
  TERN_CHECK_OK(inner(ctx, Span<EValue* const>(s->args, args.size())));
  s->inner_run = ctx.run();
  memmove(s->inner_state, ctx.state(), PrepareContext::kStateBytes);
  memset(ctx.state(), 0, PrepareContext::kStateBytes);
  memmove(ctx.state(), &s, sizeof s);
  ctx.set_run(staged_run);
  return Error::Ok;
}

}  // namespace portable
}  // namespace tern
