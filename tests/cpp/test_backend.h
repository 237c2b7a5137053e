// "tern_test": a small backend that exists only to prove the backend path
// end to end (format 1.1 delegates, runtime/backend/backend.h). It runs
// chains of float32 elementwise ops on same-shaped tensors; its partitioner
// is tests/python/tern_test_backend.py.
//
// Payload (little-endian; all counts checked at init, the payload is untrusted):
//
//   "TTB1"
//   u32 num_inputs, num_consts, num_temps, num_outputs, num_ops
//   i64 numel                        elements of every tensor
//   f32 consts[num_consts][numel]    constants the partitioner moved in
//   {u32 opcode, dst, a, b}[num_ops] in execution order
//
// Slots: inputs [0, I), consts [I, I+C), temps [I+C, I+C+T), outputs after.
// Opcodes: 0 add, 1 sub, 2 mul (dst = a op b), 3 relu (dst = max(a, 0)).
// dst is a temp or an output slot. Temps live in per-thread scratch; the
// elements are split over the method's threads.
//
//   tern::test::register_test_backend();  // idempotent
#pragma once

#include <atomic>
#include <cstdint>
#include <cstring>

#include "runtime/backend/backend.h"
#include "runtime/core/log.h"

namespace tern {
namespace test {

// Handles destroyed so far (tests check destroy() is called once per delegate).
inline std::atomic<int>& test_backend_destroyed() {
  static std::atomic<int> n{0};
  return n;
}

class TestBackend final : public Backend {
 public:
  static constexpr uint32_t kMaxCount = 4096;
  enum Op : uint32_t { kAdd = 0, kSub = 1, kMul = 2, kRelu = 3, kNumOps };

  struct Handle {
    uint32_t inputs, consts, temps, outputs, ops;
    int64_t numel;
    const uint8_t* const_data;  // in the payload (lives as long as the Program)
    const uint8_t* op_data;
  };

  const char* name() const override { return "tern_test"; }

  Result<void*> init(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                     Span<EValue* const> outputs) const override {
    Handle h;
    TERN_CHECK_OK(parse(ctx, payload, &h));
    TERN_CHECK_OK(check_args(ctx, h, inputs, outputs));
    Handle* stored = static_cast<Handle*>(ctx.allocate(sizeof(Handle)));
    if (stored == nullptr) return Error::OutOfMemory;
    *stored = h;
    ctx.request_scratch(size_t(h.temps) * size_t(h.numel) * sizeof(float));
    return static_cast<void*>(stored);
  }

  Error execute(RunContext& ctx, void* handle, EValue* const* args) const override {
    const Handle& h = *static_cast<const Handle*>(handle);
    ctx.parallel_for(h.numel, 1024, [&](RunContext& t, int64_t begin, int64_t end) {
      float* temps = static_cast<float*>(t.scratch());
      for (uint32_t k = 0; k < h.ops; ++k) {
        uint32_t op[4];
        memcpy(op, h.op_data + 16 * k, 16);
        float* dst = slot(h, args, temps, op[1]);
        const float* a = slot(h, args, temps, op[2]);
        const float* b = slot(h, args, temps, op[3]);
        for (int64_t i = begin; i < end; ++i) dst[i] = apply(op[0], a[i], op[0] == kRelu ? 0.f : b[i]);
      }
    });
    return Error::Ok;
  }

  void destroy(void*) const override { test_backend_destroyed()++; }

 private:
  static float apply(uint32_t op, float a, float b) {
    switch (op) {
      case kAdd: return a + b;
      case kSub: return a - b;
      case kMul: return a * b;
      default: return a < 0.f ? 0.f : a;  // relu: NaN passes through
    }
  }

  // Element 0 of slot s. Temps are indexed by element too: thread t's
  // scratch holds the whole temp, of which it uses its own range.
  static float* slot(const Handle& h, EValue* const* args, float* temps, uint32_t s) {
    if (s < h.inputs) return args[s]->tensor.data_as<float>();
    s -= h.inputs;
    if (s < h.consts) return reinterpret_cast<float*>(const_cast<uint8_t*>(h.const_data)) + size_t(s) * h.numel;
    s -= h.consts;
    if (s < h.temps) return temps + size_t(s) * h.numel;
    return args[h.inputs + (s - h.temps)]->tensor.data_as<float>();
  }

  static Error parse(PrepareContext& ctx, Span<const uint8_t> p, Handle* h) {
    constexpr size_t kHeader = 4 + 5 * 4 + 8;
    if (p.size() < kHeader || memcmp(p.data(), "TTB1", 4) != 0) {
      return ctx.fail(Error::InvalidProgram, "payload of %zu bytes is not a tern_test payload", p.size());
    }
    uint32_t counts[5];
    memcpy(counts, p.data() + 4, sizeof(counts));
    memcpy(&h->numel, p.data() + 24, 8);
    for (uint32_t c : counts) {
      if (c > kMaxCount) return ctx.fail(Error::InvalidProgram, "count %u over %u", c, kMaxCount);
    }
    h->inputs = counts[0], h->consts = counts[1], h->temps = counts[2], h->outputs = counts[3], h->ops = counts[4];
    if (h->numel < 1 || h->numel > (int64_t(1) << 28)) {
      return ctx.fail(Error::InvalidProgram, "numel %lld out of range", (long long)h->numel);
    }
    const uint64_t want = kHeader + uint64_t(h->consts) * h->numel * 4 + uint64_t(h->ops) * 16;
    if (p.size() != want) {
      return ctx.fail(Error::InvalidProgram, "payload has %zu bytes, its counts need %llu", p.size(),
                      (unsigned long long)want);
    }
    h->const_data = p.data() + kHeader;
    h->op_data = h->const_data + size_t(h->consts) * h->numel * 4;
    if (reinterpret_cast<uintptr_t>(h->const_data) % alignof(float) != 0) {
      return ctx.fail(Error::InvalidProgram, "constants are misaligned");
    }
    return check_ops(ctx, *h);
  }

  static Error check_ops(PrepareContext& ctx, const Handle& h) {
    const uint32_t slots = h.inputs + h.consts + h.temps + h.outputs;
    for (uint32_t k = 0; k < h.ops; ++k) {
      uint32_t op[4];
      memcpy(op, h.op_data + 16 * k, 16);
      if (op[0] >= kNumOps || op[1] >= slots || op[2] >= slots || op[3] >= slots ||
          op[1] < h.inputs + h.consts) {
        return ctx.fail(Error::InvalidProgram, "op %u {%u, %u, %u, %u} out of range (%u slots)", k, op[0],
                        op[1], op[2], op[3], slots);
      }
    }
    return Error::Ok;
  }

  // Ops write only output slots (check_ops), so only the delegate's outputs.
  static Error check_args(PrepareContext& ctx, const Handle& h, Span<EValue* const> inputs,
                          Span<EValue* const> outputs) {
    if (inputs.size() != h.inputs || outputs.size() != h.outputs) {
      return ctx.fail(Error::InvalidProgram, "%zu inputs and %zu outputs, the payload has %u inputs and %u outputs",
                      inputs.size(), outputs.size(), h.inputs, h.outputs);
    }
    for (size_t i = 0; i < inputs.size() + outputs.size(); ++i) {
      const EValue& v = i < inputs.size() ? *inputs[i] : *outputs[i - inputs.size()];
      if (v.tag != Tag::Tensor || v.tensor.dtype != ScalarType::Float32 || v.tensor.numel != h.numel) {
        return ctx.fail(Error::InvalidProgram, "argument %zu must be a float32 tensor of %lld elements", i,
                        (long long)h.numel);
      }
    }
    return Error::Ok;
  }
};

inline void register_test_backend() {
  static const TestBackend backend;
  static const bool registered = register_backend(&backend) == Error::Ok;
  (void)registered;
}

}  // namespace test
}  // namespace tern
