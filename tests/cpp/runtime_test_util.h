// Helpers for the runtime's own tests (executor, verifier, no-malloc):
//
//   - tiny test kernels under the "test::" namespace, so those tests do not
//     depend on the portable kernels being written (register_test_kernels());
//   - LoadedProgram: built bytes + BufferDataLoader + Program, kept together;
//   - MethodMemory: planned arenas and a method allocator for one method;
//   - LoadedMethod: all of the above and the loaded "forward" Method.
//
//   register_test_kernels();
//   LoadedProgram lp(pb.build());
//   ASSERT_EQ(lp.error, Error::Ok);
//   MethodMemory mem(*lp.program, "forward");
//   Result<Method> m = Method::load(*lp.program, "forward", mem.manager);
//
// Header-only (see program_builder.h).
#pragma once

#include <cstring>
#include <optional>
#include <utility>
#include <vector>

#include "kernels/portable/ops.h"
#include "kernels/portable/register.h"
#include "runtime/core/data_loader.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"
#include "runtime/kernel/registry.h"
#include "runtime/core/thread_pool.h"
#include "program_builder.h"

namespace tern {
namespace test {
namespace test_kernels {

// [self, out]: both float32 tensors of the same sizes.
inline Error expect_float_unary(PrepareContext& ctx, Span<EValue* const> args, size_t n = 2) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, n));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, n - 1));
  const Tensor& x = args[0]->tensor;
  const Tensor& y = args[n - 1]->tensor;
  if (x.dtype != ScalarType::Float32 || !tensor_same_shape(x, y)) {
    return ctx.fail(Error::InvalidProgram, "self and out must be float32 of the same sizes");
  }
  return Error::Ok;
}

// test::add_one(Tensor self) -> Tensor: out = self + 1.
inline Error add_one_run(RunContext&, EValue* const* args) {
  const Tensor& x = args[0]->tensor;
  float* out = args[1]->tensor.data_as<float>();
  for (int64_t i = 0; i < x.numel; ++i) out[i] = x.data_as<float>()[i] + 1.f;
  return Error::Ok;
}
inline Error add_one_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_float_unary(ctx, args));
  ctx.set_run(add_one_run);
  return Error::Ok;
}

// test::fail_if_negative(Tensor self) -> Tensor: out = self; ExecutionFailed
// (a data-dependent failure) when an element is negative.
inline Error fail_if_negative_run(RunContext&, EValue* const* args) {
  const Tensor& x = args[0]->tensor;
  for (int64_t i = 0; i < x.numel; ++i) {
    if (x.data_as<float>()[i] < 0) return Error::ExecutionFailed;
  }
  memcpy(args[1]->tensor.data, x.data, x.nbytes());
  return Error::Ok;
}
inline Error fail_if_negative_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_float_unary(ctx, args));
  ctx.set_run(fail_if_negative_run);
  return Error::Ok;
}

// test::scale(Tensor self, Scalar alpha) -> Tensor: out = self * alpha.
// prepare stores alpha in the instruction's state.
inline Error scale_run(RunContext& ctx, EValue* const* args) {
  float alpha;
  memcpy(&alpha, ctx.state(), sizeof(alpha));
  const Tensor& x = args[0]->tensor;
  float* out = args[2]->tensor.data_as<float>();
  for (int64_t i = 0; i < x.numel; ++i) out[i] = x.data_as<float>()[i] * alpha;
  return Error::Ok;
}
inline Error scale_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_float_unary(ctx, args, 3));
  if (!args[1]->is_scalar()) return ctx.fail(Error::InvalidProgram, "alpha must be a Scalar");
  float alpha = static_cast<float>(args[1]->to_double());
  memcpy(ctx.state(), &alpha, sizeof(alpha));
  ctx.set_run(scale_run);
  return Error::Ok;
}

// test::sum_list(Tensor[] tensors) -> Tensor: out = the elementwise sum.
inline Error sum_list_run(RunContext&, EValue* const* args) {
  Span<Tensor* const> ts = args[0]->tensors;
  Tensor& y = args[1]->tensor;
  float* out = y.data_as<float>();
  for (int64_t i = 0; i < y.numel; ++i) out[i] = 0;
  for (Tensor* t : ts) {
    for (int64_t i = 0; i < y.numel; ++i) out[i] += t->data_as<float>()[i];
  }
  return Error::Ok;
}
inline Error sum_list_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::TensorList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  for (Tensor* t : args[0]->tensors) {
    if (t->dtype != ScalarType::Float32 || !tensor_same_shape(*t, args[1]->tensor)) {
      return ctx.fail(Error::InvalidProgram, "list items must match out");
    }
  }
  ctx.set_run(sum_list_run);
  return Error::Ok;
}

// test::positive(Tensor self) -> Tensor: a bool [1] out, self[0] > 0.
inline Error positive_run(RunContext&, EValue* const* args) {
  *args[1]->tensor.data_as<uint8_t>() = args[0]->tensor.data_as<float>()[0] > 0;
  return Error::Ok;
}
inline Error positive_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  if (args[0]->tensor.dtype != ScalarType::Float32 || args[0]->tensor.numel < 1 ||
      args[1]->tensor.dtype != ScalarType::Bool || args[1]->tensor.numel != 1) {
    return ctx.fail(Error::InvalidProgram, "self must be a non-empty float32, out a 1-element bool");
  }
  ctx.set_run(positive_run);
  return Error::Ok;
}

// test::scratch_double(Tensor self) -> Tensor: out = 2 * self, through 1000
// bytes of scratch; fails if the scratch is missing, small or misaligned.
constexpr size_t kScratchRequest = 1000;
inline Error scratch_double_run(RunContext& ctx, EValue* const* args) {
  if (ctx.scratch() == nullptr || ctx.scratch_bytes() < kScratchRequest ||
      reinterpret_cast<uintptr_t>(ctx.scratch()) % 64 != 0) {
    return Error::ExecutionFailed;
  }
  const Tensor& x = args[0]->tensor;
  float* tmp = static_cast<float*>(ctx.scratch());
  for (int64_t i = 0; i < x.numel; ++i) tmp[i] = 2 * x.data_as<float>()[i];
  memcpy(args[1]->tensor.data, tmp, x.nbytes());
  return Error::Ok;
}
inline Error scratch_double_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_float_unary(ctx, args));
  if (args[0]->tensor.nbytes() > kScratchRequest) return ctx.fail(Error::InvalidProgram, "too big");
  ctx.request_scratch(kScratchRequest);
  ctx.set_run(scratch_double_run);
  return Error::Ok;
}

// test::reject(Tensor self) -> Tensor: prepare always fails (NotSupported).
inline Error reject_prepare(PrepareContext& ctx, Span<EValue* const>) {
  return ctx.fail(Error::NotSupported, "this test kernel rejects every call");
}

// test::split_sign(Tensor self) -> (Tensor, Tensor): out0 = max(self, 0),
// out1 = min(self, 0). Two outs.
inline Error split_sign_run(RunContext&, EValue* const* args) {
  const Tensor& x = args[0]->tensor;
  for (int64_t i = 0; i < x.numel; ++i) {
    float v = x.data_as<float>()[i];
    args[1]->tensor.data_as<float>()[i] = v > 0 ? v : 0;
    args[2]->tensor.data_as<float>()[i] = v < 0 ? v : 0;
  }
  return Error::Ok;
}
inline Error split_sign_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(expect_float_unary(ctx, args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 1));
  if (!tensor_same_shape(args[0]->tensor, args[1]->tensor)) return ctx.fail(Error::InvalidProgram, "shape");
  ctx.set_run(split_sign_run);
  return Error::Ok;
}

}  // namespace test_kernels

// Registers the test:: kernels once per process.
inline void register_test_kernels() {
  static const OpKernel kKernels[] = {
      {"test::add_one", 1, test_kernels::add_one_prepare},
      {"test::fail_if_negative", 1, test_kernels::fail_if_negative_prepare},
      {"test::scale", 1, test_kernels::scale_prepare},
      {"test::sum_list", 1, test_kernels::sum_list_prepare},
      {"test::positive", 1, test_kernels::positive_prepare},
      {"test::scratch_double", 1, test_kernels::scratch_double_prepare},
      {"test::reject", 1, test_kernels::reject_prepare},
      {"test::split_sign", 2, test_kernels::split_sign_prepare},
  };
  static const bool registered = register_kernels({kKernels, sizeof(kKernels) / sizeof(kKernels[0])}) == Error::Ok;
  (void)registered;
}

// Registers the portable aten::relu alone (binaries that do not use Module,
// which registers every portable kernel).
inline void register_relu() { (void)register_portable_kernels(); }

// The bytes of a file, a loader over them and the Program, kept together (the
// Program points into the bytes).
struct LoadedProgram {
  explicit LoadedProgram(AlignedBytes b) : bytes(std::move(b)), loader(bytes.data(), bytes.size()) {
    Result<Program> r = Program::load(loader);
    error = r.error();
    if (r.ok()) program.emplace(std::move(*r));
  }
  LoadedProgram(const LoadedProgram&) = delete;
  LoadedProgram& operator=(const LoadedProgram&) = delete;

  AlignedBytes bytes;
  BufferDataLoader loader;
  Error error;
  std::optional<Program> program;
};

// Planned arenas (sized from the file, 64-aligned) and a method allocator of
// `method_bytes` for one method.
struct MethodMemory {
  MethodMemory(const Program& program, const char* method, size_t method_bytes = 64 * 1024)
      : pool(method_bytes), allocator(pool.data(), method_bytes) {
    const fb::Method* m = program.method(method);
    uint32_t n = m && m->arena_sizes() ? m->arena_sizes()->size() : 0;
    for (uint32_t i = 0; i < n; ++i) arenas.emplace_back(m->arena_sizes()->Get(i));
    for (AlignedBytes& a : arenas) spans.emplace_back(a.data(), a.size());
    manager.method_allocator = &allocator;
    manager.planned = Span<const Span<uint8_t>>(spans.data(), spans.size());
  }
  MethodMemory(const MethodMemory&) = delete;
  MethodMemory& operator=(const MethodMemory&) = delete;

  std::vector<AlignedBytes> arenas;
  std::vector<Span<uint8_t>> spans;
  AlignedBytes pool;
  MemoryAllocator allocator;
  MemoryManager manager;
};

// A built program, loaded, with memory for its "forward" and the method.
// Aborts if the program itself does not load (a broken test).
struct LoadedMethod {
  explicit LoadedMethod(const ProgramBuilder& pb, size_t method_bytes = 64 * 1024)
      : lp(pb.build()), mem(*checked(lp), "forward", method_bytes),
        method(Method::load(*lp.program, "forward", mem.manager)) {}

  static const Program* checked(const LoadedProgram& lp) {
    if (lp.error != Error::Ok) TERN_ABORT("test program failed to load: %s", last_error_message());
    return &*lp.program;
  }

  LoadedProgram lp;
  MethodMemory mem;
  Result<Method> method;
};

// x -> add_one -> t -> add_one -> y, through planned memory.
inline ProgramBuilder chain_program() {
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(192);
  uint32_t x = m.planned(ScalarType::Float32, {2, 2}, 0, arena);
  uint32_t t = m.planned(ScalarType::Float32, {2, 2}, 64, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2, 2}, 128, arena);
  m.call("test::add_one", "", {x, t});
  m.call("test::add_one", "", {t, y});
  m.debug = {{"add_1", "model.py:10 in forward: x + 1"}, {"add_2", "model.py:11 in forward: t + 1"}};
  m.inputs = {x};
  m.outputs = {y};
  return pb;
}

// Fills `m`: x [2, 3] -> relu -> t -> add_one -> y, so y = relu(x) + 1,
// through planned memory (needs register_test_kernels() and register_relu()).
inline void relu_add_one_method(MethodBuilder& m) {
  uint32_t arena = m.arena(128);
  uint32_t x = m.planned(ScalarType::Float32, {2, 3}, 0, arena);
  uint32_t t = m.planned(ScalarType::Float32, {2, 3}, 32, arena);
  uint32_t y = m.planned(ScalarType::Float32, {2, 3}, 64, arena);
  m.call("aten::relu", "", {x, t});
  m.call("test::add_one", "", {t, y});
  m.inputs = {x};
  m.outputs = {y};
}

// Reads n floats from a tensor.
inline std::vector<float> floats(const Tensor& t) {
  return std::vector<float>(t.data_as<float>(), t.data_as<float>() + t.numel);
}

}  // namespace test
}  // namespace tern
