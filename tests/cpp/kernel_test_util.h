// Helpers for kernel tests: own the memory of a few tensors and values, run a
// kernel's prepare then run, as the executor would.
//
//   KernelHarness h;   // tern::test::KernelHarness
//   EValue* x = h.tensor<float>({2, 3}, {1, -2, 3, -4, 5, -6});
//   EValue* y = h.empty<float>({2, 3});
//   ASSERT_EQ(h.call(tern::portable::relu_prepare, {x, y}), Error::Ok);
//   EXPECT_EQ(h.values<float>(y)[1], 0.f);
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <initializer_list>
#include <vector>

#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"

namespace tern {
namespace test {

class KernelHarness {
 public:
  template <typename T>
  EValue* tensor(std::vector<int64_t> sizes, std::vector<T> data) {
    EValue* v = empty<T>(sizes);
    EXPECT_EQ(static_cast<size_t>(v->tensor.numel), data.size()) << "test data size";
    if (!data.empty()) memcpy(v->tensor.data, data.data(), data.size() * sizeof(T));
    return v;
  }
  // bool tensors: std::vector<bool> has no data(), so take uint8_t.
  EValue* bool_tensor(std::vector<int64_t> sizes, std::vector<uint8_t> data) {
    EValue* v = empty_of(ScalarType::Bool, sizes);
    memcpy(v->tensor.data, data.data(), data.size());
    return v;
  }
  template <typename T>
  EValue* empty(std::vector<int64_t> sizes) {
    return empty_of(ScalarTypeOf<T>::value, sizes);
  }
  EValue* empty_of(ScalarType dtype, std::vector<int64_t> sizes) {
    EValue* v = &values_.emplace_back();
    v->tag = Tag::Tensor;
    v->tensor = Tensor();
    v->tensor.dtype = dtype;
    v->tensor.dim = static_cast<int32_t>(sizes.size());
    v->tensor.numel = 1;
    for (size_t i = 0; i < sizes.size(); ++i) {
      v->tensor.sizes[i] = sizes[i];
      v->tensor.numel *= sizes[i];
    }
    // Poison so a kernel that leaves out elements unwritten is caught.
    auto& buf = buffers_.emplace_back(v->tensor.nbytes() + 64, uint8_t(0xA5));
    v->tensor.data = align64(buf.data());
    return v;
  }
  EValue* i(int64_t x) { EValue* v = &values_.emplace_back(); v->tag = Tag::Int; v->i = x; return v; }
  EValue* d(double x) { EValue* v = &values_.emplace_back(); v->tag = Tag::Double; v->d = x; return v; }
  EValue* b(bool x) { EValue* v = &values_.emplace_back(); v->tag = Tag::Bool; v->b = x; return v; }
  EValue* none() { EValue* v = &values_.emplace_back(); v->tag = Tag::None; return v; }
  EValue* str(const char* s) { EValue* v = &values_.emplace_back(); v->tag = Tag::String; v->str = s; return v; }
  EValue* ints(std::vector<int64_t> xs) {
    auto& store = int_lists_.emplace_back(std::move(xs));
    EValue* v = &values_.emplace_back();
    v->tag = Tag::IntList;
    v->ints = Span<const int64_t>(store.data(), store.size());
    return v;
  }
  EValue* doubles(std::vector<double> xs) {
    auto& store = double_lists_.emplace_back(std::move(xs));
    EValue* v = &values_.emplace_back();
    v->tag = Tag::DoubleList;
    v->doubles = Span<const double>(store.data(), store.size());
    return v;
  }
  EValue* tensors(std::vector<EValue*> ts, bool optional = false) {
    auto& store = tensor_lists_.emplace_back();
    for (EValue* t : ts) store.push_back(t ? &t->tensor : nullptr);
    EValue* v = &values_.emplace_back();
    v->tag = optional ? Tag::OptionalTensorList : Tag::TensorList;
    v->tensors = Span<Tensor* const>(store.data(), store.size());
    return v;
  }

  // prepare + run. Returns the first error.
  Error call(PrepareFn prepare, std::vector<EValue*> args) {
    PrepareContext ctx("test_op", 0);
    Error e = prepare(ctx, Span<EValue* const>(args.data(), args.size()));
    if (e != Error::Ok) return e;
    if (ctx.run() == nullptr) return Error::InvalidProgram;
    std::vector<uint8_t> scratch(ctx.scratch() + 64);
    alignas(16) unsigned char state[PrepareContext::kStateBytes];
    memcpy(state, ctx.state(), sizeof(state));
    RunContext rctx(align64(scratch.data()), ctx.scratch(), state);
    return ctx.run()(rctx, args.data());
  }
  // prepare only (for tests that a bad argument is rejected at load).
  Error prepare_only(PrepareFn prepare, std::vector<EValue*> args) {
    PrepareContext ctx("test_op", 0);
    return prepare(ctx, Span<EValue* const>(args.data(), args.size()));
  }

  template <typename T>
  std::vector<T> values(EValue* v) {
    const T* p = v->tensor.data_as<T>();
    return std::vector<T>(p, p + v->tensor.numel);
  }

 private:
  static void* align64(uint8_t* p) {
    return reinterpret_cast<void*>((reinterpret_cast<uintptr_t>(p) + 63) & ~uintptr_t(63));
  }
  std::deque<EValue> values_;
  std::deque<std::vector<uint8_t>> buffers_;
  std::deque<std::vector<int64_t>> int_lists_;
  std::deque<std::vector<double>> double_lists_;
  std::deque<std::vector<Tensor*>> tensor_lists_;
};

}  // namespace test
}  // namespace tern
