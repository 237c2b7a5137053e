// The kernel interface: how the executor calls an operator.
//
// A kernel is two functions, split by trust boundary:
//
//   prepare  runs once, at Method::load. It receives the instruction's
//            arguments (shapes and dtypes are static in format v1), checks
//            everything the file could get wrong (argument count and tags,
//            dtypes, shapes, out sizes, parameter ranges), and picks the run
//            function (e.g. per dtype). It may keep up to kStateBytes of
//            state inline, allocate persistent memory for the method's life
//            (packed weights, lookup tables) and ask for scratch per thread.
//            A failure returns an Error through ctx.fail(), whose reason the
//            executor reports once, with the instruction, op and node.
//   run      runs at every execute(), on arguments that prepare accepted. It
//            allocates nothing, re-checks nothing, and fails only on what
//            depends on the data itself (e.g. an embedding index out of range).
//            It may split its work over the method's threads (RunContext).
//
// Arguments arrive in the order of the ATen schema (defaults filled in by the
// exporter), followed by the out tensor(s): for
//   aten::add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor
// args = [self, other, alpha, out]. Out tensors have their final sizes and
// planned memory already; kernels write them, never resize them. An op that
// returns Tensor[] (e.g. aten::split_with_sizes) gets one TensorList out whose
// items are planned tensors. A Python number where the schema says Tensor
// (x + 2) arrives as an Int/Double/Bool value or a 0-d constant tensor; either
// takes part in type promotion as a "wrapped number" (lower priority than
// tensors with dimensions), as in ATen.
//
// A kernel that does not take some arguments (a dtype it has no loop for, a
// transposed convolution) fails with Error::OperatorMissing: the executor
// then tries the same op in the next kernel library (runtime/kernel/registry.h),
// so an optimized kernel can cover only the cases it is fast at.
//
// Example (a unary kernel that splits its elements over the threads; the
// portable ones are in kernels/portable/op_*.cpp):
//
//   static tern::Error relu_run(tern::RunContext& ctx, tern::EValue* const* args) {
//     const tern::Tensor& x = args[0]->tensor;  tern::Tensor& y = args[1]->tensor;
//     ctx.parallel_for(x.numel, 4096, [&](tern::RunContext&, int64_t begin, int64_t end) {
//       for (int64_t i = begin; i < end; ++i) ...;
//     });
//     return tern::Error::Ok;
//   }
//   tern::Error relu_prepare(tern::PrepareContext& ctx, tern::Span<tern::EValue* const> args) {
//     TERN_CHECK_OK(ctx.expect_arg_count(args, 2));
//     ... checks ...
//     ctx.set_run(relu_run);
//     return tern::Error::Ok;
//   }
#pragma once

#include <cstddef>
#include <cstdint>

#include "runtime/core/context.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/scalar_type.h"
#include "runtime/core/span.h"

namespace tern {

using PrepareFn = Error (*)(PrepareContext& ctx, Span<EValue* const> args);

// Bit of a ScalarType in OpKernel::dtypes.
constexpr uint32_t dtype_bit(ScalarType t) { return uint32_t(1) << static_cast<int>(t); }
// OpKernel::dtypes of a kernel that takes any dtype (its prepare decides).
constexpr uint32_t kAnyDtype = 0;
// kDtypeSetInvalid: what dtype_set() returns for a word it does not know.
constexpr uint32_t kDtypeSetInvalid = ~uint32_t(0);

namespace detail {
constexpr bool word_is(const char* s, int n, const char* word) {
  int i = 0;
  for (; i < n && word[i] != '\0'; ++i) {
    if (s[i] != word[i]) return false;
  }
  return i == n && word[i] == '\0';
}
}  // namespace detail

// The OpKernel::dtypes of a space-separated list of dtype names (as
// scalar_type_name() spells them) and groups: "floating" (float32 float64),
// "half" (float16 bfloat16),
// "integral" (int8 uint8 int16 int32 int64), "any" (kAnyDtype, alone), e.g.
// dtype_set("floating integral bool"). kDtypeSetInvalid for an unknown word
// or an empty list, so a kernel table can static_assert its lists.
constexpr uint32_t dtype_set(const char* names) {
  constexpr const char* kNames[] = {"float32", "float64", "float16", "bfloat16", "int8",
                                    "uint8",   "int16",   "int32",   "int64",    "bool"};
  uint32_t mask = 0;
  bool any = false, empty = true;
  for (const char* p = names; *p != '\0';) {
    if (*p == ' ') {
      ++p;
      continue;
    }
    int n = 0;
    while (p[n] != '\0' && p[n] != ' ') ++n;
    empty = false;
    uint32_t bits = 0;
    for (int t = 0; t < 10; ++t) {
      if (detail::word_is(p, n, kNames[t])) bits = uint32_t(1) << t;
    }
    if (detail::word_is(p, n, "floating")) bits = 0x3;
    if (detail::word_is(p, n, "half")) bits = 0xC;
    if (detail::word_is(p, n, "integral")) bits = 0x1F0;
    if (detail::word_is(p, n, "any")) any = true;
    if (bits == 0 && !detail::word_is(p, n, "any")) return kDtypeSetInvalid;
    mask |= bits;
    p += n;
  }
  if (empty || (any && mask != 0)) return kDtypeSetInvalid;
  return any ? kAnyDtype : mask;
}

// One operator of a kernel library: "aten::add.Tensor" -> prepare.
struct OpKernel {
  const char* name;  // "<namespace>::<name>.<overload>", or without ".<overload>" for the default overload
  uint32_t num_outputs;  // the last num_outputs arguments are out tensors
  PrepareFn prepare;
  // dtype_bit()s of the instruction dtypes this kernel is for, or kAnyDtype.
  // The instruction dtype is that of its first tensor argument (list items
  // included, outs last). Lookup skips a kernel whose set excludes it
  // without calling its prepare.
  uint32_t dtypes = kAnyDtype;
};

}  // namespace tern
