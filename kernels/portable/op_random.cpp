// Random ops. PyTorch eager is no oracle for their values (its generator's
// stream is its own); they follow its distributions:
//
// aten::rand(SymInt[] size, *, ScalarType? dtype, Layout?, Device?, bool? pin_memory)
//   args: [size, dtype, layout, device, pin_memory, out]; uniform on [0, 1)
// aten::randn(...same...)                      normal, mean 0, variance 1
// aten::randperm(SymInt n, *, ScalarType? dtype=long, Layout?, Device?, bool? pin_memory)
//   args: [n, dtype, layout, device, pin_memory, out]; a permutation of 0..n-1
// aten::native_dropout(Tensor input, float p, bool? train) -> (Tensor, Tensor)
//   args: [input, p, train, out, mask]; with train, each element is zeroed
//   with probability p (mask false) and the others scaled by 1 / (1 - p);
//   without, out = input and mask is all true.
//
// The generator: SplitMix64 over a 64-bit counter kept in the instruction's
// persistent memory (the one place run() writes it), seeded with the
// instruction index: each call of a loaded method draws new numbers, two
// loads of a file draw the same ones. One thread draws, in element order.
#include <cmath>
#include <cstring>

#include "kernels/portable/util/checks.h"
#include "kernels/portable/util/copy.h"

namespace tern {
namespace portable {
namespace {

struct Generator {
  uint64_t state;
  uint64_t next() {  // SplitMix64 (Steele, Lea, Flood 2014)
    uint64_t z = (state += 0x9E3779B97F4A7C15ull);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
    return z ^ (z >> 31);
  }
  double uniform() { return static_cast<double>(next() >> 11) * (1.0 / 9007199254740992.0); }  // [0, 1), 53 bits
  float uniform_f() { return static_cast<float>(next() >> 40) * (1.0f / 16777216.0f); }        // [0, 1), 24 bits
};

struct RandomState {
  Generator* gen;  // persistent
  double p;        // dropout
  bool train;
  int out;
};

Error new_generator(PrepareContext& ctx, RandomState* st) {
  st->gen = static_cast<Generator*>(ctx.allocate(sizeof(Generator)));
  if (st->gen == nullptr) return Error::OutOfMemory;
  st->gen->state = 0x5EED0000ull + ctx.instruction();
  return Error::Ok;
}

RandomState state_of(const RunContext& ctx) {
  RandomState st;
  memcpy(&st, ctx.state(), sizeof(st));
  return st;
}

template <typename T>
Error rand_run(RunContext& ctx, EValue* const* args) {
  RandomState st = state_of(ctx);
  Tensor& out = args[st.out]->tensor;
  T* y = out.data_as<T>();
  for (int64_t i = 0; i < out.numel; ++i) y[i] = sizeof(T) == 4 ? static_cast<T>(st.gen->uniform_f()) : static_cast<T>(st.gen->uniform());
  return Error::Ok;
}

template <typename T>
Error randn_run(RunContext& ctx, EValue* const* args) {
  RandomState st = state_of(ctx);
  Tensor& out = args[st.out]->tensor;
  T* y = out.data_as<T>();
  constexpr double kTwoPi = 6.283185307179586;
  for (int64_t i = 0; i < out.numel; i += 2) {  // Box-Muller: two normals per two uniforms
    const double r = std::sqrt(-2.0 * std::log(1.0 - st.gen->uniform()));  // 1 - u in (0, 1]
    const double theta = kTwoPi * st.gen->uniform();
    y[i] = static_cast<T>(r * std::cos(theta));
    if (i + 1 < out.numel) y[i + 1] = static_cast<T>(r * std::sin(theta));
  }
  return Error::Ok;
}

template <typename T>
Error randperm_run(RunContext& ctx, EValue* const* args) {
  RandomState st = state_of(ctx);
  Tensor& out = args[st.out]->tensor;
  T* y = out.data_as<T>();
  const int64_t n = out.numel;
  for (int64_t i = 0; i < n; ++i) y[i] = static_cast<T>(i);
  for (int64_t i = n - 1; i > 0; --i) {  // Fisher-Yates
    const int64_t j = static_cast<int64_t>(st.gen->next() % static_cast<uint64_t>(i + 1));
    const T t = y[i];
    y[i] = y[j];
    y[j] = t;
  }
  return Error::Ok;
}

template <typename T>
Error dropout_run(RunContext& ctx, EValue* const* args) {
  RandomState st = state_of(ctx);
  const Tensor& x = args[0]->tensor;
  const T* in = x.data_as<const T>();
  T* y = args[3]->tensor.data_as<T>();
  bool* mask = args[4]->tensor.data_as<bool>();
  const double scale = st.p < 1.0 ? 1.0 / (1.0 - st.p) : 0.0;
  for (int64_t i = 0; i < x.numel; ++i) {
    const bool keep = !st.train || st.gen->uniform() >= st.p;
    mask[i] = keep;
    y[i] = keep ? (st.train ? static_cast<T>(static_cast<double>(in[i]) * scale) : in[i]) : T(0);
  }
  return Error::Ok;
}

// The out of rand / randn: sizes from args[0], a floating dtype.
Error prepare_sized(PrepareContext& ctx, Span<EValue* const> args, ScalarType* dtype) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::IntList));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  Span<const int64_t> size = args[0]->ints;
  if (size.size() > static_cast<size_t>(kMaxDims)) {
    return ctx.fail(Error::InvalidProgram, "size has %zu dims, at most %d", size.size(), kMaxDims);
  }
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[1], "dtype", ScalarType::Float32, dtype));
  if (*dtype != ScalarType::Float32 && *dtype != ScalarType::Float64) return fail_dtype(ctx, "dtype", *dtype);
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", size.data(), static_cast<int>(size.size())));
  return expect_dtype(ctx, args[5]->tensor, "out", *dtype);
}

Error finish(PrepareContext& ctx, RandomState st, RunFn run) {
  TERN_CHECK_OK(new_generator(ctx, &st));
  memmove(ctx.state(), &st, sizeof(st));
  ctx.set_run(run);
  return Error::Ok;
}

}  // namespace

Error rand_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  ScalarType dtype;
  TERN_CHECK_OK(prepare_sized(ctx, args, &dtype));
  return finish(ctx, RandomState{nullptr, 0, false, 5}, dtype == ScalarType::Float32 ? rand_run<float> : rand_run<double>);
}

Error randn_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  ScalarType dtype;
  TERN_CHECK_OK(prepare_sized(ctx, args, &dtype));
  return finish(ctx, RandomState{nullptr, 0, false, 5}, dtype == ScalarType::Float32 ? randn_run<float> : randn_run<double>);
}

Error randperm_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 6));
  TERN_CHECK_OK(ctx.expect_tag(args, 0, Tag::Int));
  TERN_CHECK_OK(ctx.expect_tensor(args, 5));
  const int64_t n = args[0]->i;
  if (n < 0) return ctx.fail(Error::InvalidProgram, "n must be >= 0, got %lld", (long long)n);
  ScalarType dtype;
  TERN_CHECK_OK(parse_optional_dtype(ctx, *args[1], "dtype", ScalarType::Int64, &dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[5]->tensor, "out", &n, 1));
  TERN_CHECK_OK(expect_dtype(ctx, args[5]->tensor, "out", dtype));
  RunFn run = nullptr;
  switch (dtype) {
    case ScalarType::Int64: run = randperm_run<int64_t>; break;
    case ScalarType::Int32: run = randperm_run<int32_t>; break;
    case ScalarType::Float32: run = randperm_run<float>; break;
    case ScalarType::Float64: run = randperm_run<double>; break;
    default: return fail_dtype(ctx, "dtype", dtype);
  }
  return finish(ctx, RandomState{nullptr, 0, false, 5}, run);
}

Error native_dropout_prepare(PrepareContext& ctx, Span<EValue* const> args) {
  TERN_CHECK_OK(ctx.expect_arg_count(args, 5));
  TERN_CHECK_OK(ctx.expect_tensor(args, 0));
  const Tensor& x = args[0]->tensor;
  if (x.dtype != ScalarType::Float32 && x.dtype != ScalarType::Float64) return fail_dtype(ctx, "input", x.dtype);
  if (!args[1]->is_scalar()) return ctx.fail(Error::InvalidProgram, "p must be a float");
  const double p = args[1]->to_double();
  if (!(p >= 0.0 && p <= 1.0)) return ctx.fail(Error::InvalidProgram, "p must be in [0, 1], got %g", p);
  if (!args[2]->is_none() && !args[2]->is_bool()) return ctx.fail(Error::InvalidProgram, "train must be a bool or None");
  const bool train = args[2]->is_none() || args[2]->b;
  TERN_CHECK_OK(ctx.expect_tensor(args, 3));
  TERN_CHECK_OK(ctx.expect_tensor(args, 4));
  TERN_CHECK_OK(expect_same_shape(ctx, x, args[3]->tensor, "input", "out"));
  TERN_CHECK_OK(expect_dtype(ctx, args[3]->tensor, "out", x.dtype));
  TERN_CHECK_OK(expect_sizes(ctx, args[4]->tensor, "mask", x.sizes, x.dim));
  TERN_CHECK_OK(expect_dtype(ctx, args[4]->tensor, "mask", ScalarType::Bool));
  return finish(ctx, RandomState{nullptr, p, train, 3},
                x.dtype == ScalarType::Float32 ? dropout_run<float> : dropout_run<double>);
}

}  // namespace portable
}  // namespace tern
