// Helpers for kernel tests: own the memory of a few tensors and values, run a
// kernel's prepare then run, as the executor would.
//
//   KernelHarness h;   // tern::test::KernelHarness
//   EValue* x = h.tensor<float>({2, 3}, {1, -2, 3, -4, 5, -6});
//   EValue* y = h.empty<float>({2, 3});
//   ASSERT_EQ(h.call("aten::relu", {x, y}), Error::Ok);
//   EXPECT_EQ(h.values<float>(y)[1], 0.f);
//
// Which kernel: the op's kernel in the library named by the environment
// variable TERN_TEST_KERNEL_LIBRARY ("portable" when unset), or, where that
// library lacks the op, the next one down (as Method::load would bind it).
// So every kernel test runs against any registered library:
//   TERN_TEST_KERNEL_LIBRARY=portable build/tests/cpp/kernels_math_test
//
// Threads: call() runs the kernel with 1 thread, then again (freshly
// prepared, outs poisoned) with 2 and 3 threads of a pool, and fails the
// test unless every out is bit-identical and the error the same: kernels
// give the same results for any thread count.
#pragma once

#include <gtest/gtest.h>

#include <cstring>
#include <deque>
#include <initializer_list>
#include <string>
#include <vector>

#include "extension/heap_allocator.h"
#include "kernels/portable/register.h"
#include "runtime/core/evalue.h"
#include "runtime/kernel/kernel.h"
#include "runtime/kernel/registry.h"
#include "runtime/core/thread_pool.h"

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

  // prepare + run with 1, 2 and 3 threads (see above). Returns the first
  // error of the 1-thread call.
  Error call(const char* op, std::vector<EValue*> args) {
    const OpKernel* k = kernel(op);
    if (k == nullptr) return Error::OperatorMissing;
    bool ran = false;
    Error first = call_once(*k, args, 1, &ran);
    if (!ran) return first;  // prepare failed: nothing to compare
    std::vector<std::vector<uint8_t>> want = out_bytes(*k, args);
    for (int threads : {2, 3}) {
      poison_outs(*k, args);
      EXPECT_EQ(call_once(*k, args, threads, &ran), first) << op << " with " << threads << " threads";
      EXPECT_TRUE(out_bytes(*k, args) == want) << op << ": outs differ between 1 and " << threads << " threads";
    }
    return first;
  }
  // prepare only (for tests that a bad argument is rejected at load).
  // `message`, if given, receives the kernel's reason for a refusal.
  Error prepare_only(const char* op, std::vector<EValue*> args, std::string* message = nullptr) {
    const OpKernel* k = kernel(op);
    if (k == nullptr) return Error::OperatorMissing;
    HeapAllocator allocator;
    PrepareContext ctx(op, 0, &allocator);
    const Error e = k->prepare(ctx, Span<EValue* const>(args.data(), args.size()));
    if (message != nullptr) *message = ctx.message();
    return e;
  }

  // The kernel call() uses for `op` (nullptr, with a test failure, if none).
  static const OpKernel* kernel(const char* op) {
    (void)register_portable_kernels();
    const char* name = getenv("TERN_TEST_KERNEL_LIBRARY");
    const KernelLibrary* lib = find_kernel_library(name && name[0] ? name : "portable");
    if (lib == nullptr) {
      ADD_FAILURE() << "TERN_TEST_KERNEL_LIBRARY=" << name << ": no such kernel library registered";
      return nullptr;
    }
    const OpKernel* k = find_kernel_in(*lib, op);
    if (k == nullptr) k = find_kernel_in(*find_kernel_library("portable"), op);
    if (k == nullptr) ADD_FAILURE() << "no kernel for " << op;
    return k;
  }

  template <typename T>
  std::vector<T> values(EValue* v) {
    const T* p = v->tensor.data_as<T>();
    return std::vector<T>(p, p + v->tensor.numel);
  }

 private:
  // One prepare + run with `threads` threads; *ran: whether prepare passed.
  Error call_once(const OpKernel& k, std::vector<EValue*>& args, int threads, bool* ran) {
    HeapAllocator allocator;
    PrepareContext ctx(k.name, 0, &allocator, threads);
    Error e = k.prepare(ctx, Span<EValue* const>(args.data(), args.size()));
    *ran = e == Error::Ok;
    if (e != Error::Ok) return e;
    if (ctx.run() == nullptr) return Error::InvalidProgram;
    const size_t stride = (ctx.scratch() + 63) & ~size_t(63);
    std::vector<uint8_t> scratch(stride * threads + 64, uint8_t(0x5A));
    alignas(16) unsigned char state[PrepareContext::kStateBytes];
    memcpy(state, ctx.state(), sizeof(state));
    static ThreadPool pool;
    if (threads > 1 && pool.reserve(threads) != Error::Ok) return Error::NotSupported;
    RunContext rctx(state, align64(scratch.data()), ctx.scratch(), threads, stride, threads > 1 ? &pool : nullptr);
    return ctx.run()(rctx, args.data());
  }

  // The tensors of the last k.num_outputs arguments (list items included).
  static std::vector<Tensor*> outs(const OpKernel& k, const std::vector<EValue*>& args) {
    std::vector<Tensor*> ts;
    for (size_t i = args.size() >= k.num_outputs ? args.size() - k.num_outputs : 0; i < args.size(); ++i) {
      if (args[i]->tag == Tag::Tensor) ts.push_back(&args[i]->tensor);
      if (args[i]->tag == Tag::TensorList) ts.insert(ts.end(), args[i]->tensors.begin(), args[i]->tensors.end());
    }
    return ts;
  }
  static std::vector<std::vector<uint8_t>> out_bytes(const OpKernel& k, const std::vector<EValue*>& args) {
    std::vector<std::vector<uint8_t>> bytes;
    for (Tensor* t : outs(k, args)) {
      const uint8_t* p = static_cast<const uint8_t*>(t->data);
      bytes.emplace_back(p, p + t->nbytes());
    }
    return bytes;
  }
  static void poison_outs(const OpKernel& k, const std::vector<EValue*>& args) {
    for (Tensor* t : outs(k, args)) {
      if (t->nbytes()) memset(t->data, 0xA5, t->nbytes());
    }
  }

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
