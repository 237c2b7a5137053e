// Backends: runtimes for whole subgraphs that the exporter handed over
// (format 1.1, Method.delegates). A backend reads a payload in its own format
// (e.g. weights packed for its microkernels) once, at Method::load, and runs
// the subgraph at every execute().
//
//   class CpuBackend final : public tern::Backend {
//    public:
//     const char* name() const override { return "cpu"; }
//     tern::Result<void*> init(tern::PrepareContext& ctx, tern::Span<const uint8_t> payload,
//                              tern::Span<tern::EValue* const> inputs,
//                              tern::Span<tern::EValue* const> outputs) const override;
//     tern::Error execute(tern::RunContext& ctx, void* handle, tern::EValue* const* args) const override;
//   };
//   static const CpuBackend kCpu;
//   tern::register_backend(&kCpu);               // once, before loading methods
//
// The contract is the kernels' (runtime/kernel/kernel.h), with the same
// contexts (runtime/core/context.h), split the same way:
//
//   init     at Method::load. `payload` is untrusted bytes from the file:
//            check every index, size and count in it before use, and check
//            the delegate's `inputs` and `outputs` (tensors; their sizes
//            are the upper bounds where they are dynamic, see reshape)
//            against it: the payload's count of each must
//            be the delegate's, and only outputs may be written (an input
//            may be a constant inside the program's read-only bytes; the
//            executor checked every output is planned memory). Take memory only from
//            ctx: ctx.allocate() for what lives as long as the method
//            (packed weights, the handle itself), ctx.request_scratch() for
//            per-run, per-thread scratch. Fail with ctx.fail(), which names
//            the problem; the executor adds method, delegate and backend.
//            Returns the handle execute() receives.
//   execute  at every Method::execute(), with `args` the inputs then the
//            outputs (the same values init saw): no allocation, no re-checking;
//            split work over ctx's threads with ctx.parallel_for().
//   reshape  dynamic shapes (format 1.3): a delegate whose inputs or outputs
//            have dynamic sizes is initialized at their upper bounds (the
//            sizes the memory plan holds); when a call's input shapes
//            change, the executor sets the new sizes on those tensors (the
//            outputs' from the method's size expressions) and calls
//            reshape before execute. Like a kernel's second prepare: no
//            allocation (ctx has no allocator), scratch only up to what init
//            requested, and every size checked again, since the new ones
//            come from the file's expressions. The default refuses
//            (NotSupported): the exporter gives such a backend static
//            subgraphs only.
//   destroy  when the Method goes away: release anything init took outside
//            ctx (the default does nothing, which is right for backends that
//            take all their memory from ctx).
//   describe what init chose, as key=value pairs (optional): the cpu
//            backend says which kernel sets it runs; describe_details, all
//            of it (the cpu backend: each microkernel by name).
//
// Thread safety: a Backend object is shared by every method that uses it, on
// any thread; keep per-delegate state behind the handle.
#pragma once

#include <cstdint>
#include <cstring>

#include "runtime/core/context.h"
#include "runtime/core/error.h"
#include "runtime/core/evalue.h"
#include "runtime/core/result.h"
#include "runtime/core/span.h"

namespace tern {

class Backend {
 public:
  // The name the exporter's partitioner writes into the file ("cpu").
  virtual const char* name() const = 0;
  virtual Result<void*> init(PrepareContext& ctx, Span<const uint8_t> payload, Span<EValue* const> inputs,
                             Span<EValue* const> outputs) const = 0;
  virtual Error execute(RunContext& ctx, void* handle, EValue* const* args) const = 0;
  virtual Error reshape(PrepareContext& ctx, void* handle, Span<EValue* const> inputs,
                        Span<EValue* const> outputs) const {
    (void)handle, (void)inputs, (void)outputs;
    return ctx.fail(Error::NotSupported, "backend %s takes static shapes only", name());
  }
  virtual void destroy(void* handle) const { (void)handle; }
  // What an initialized delegate runs on, as space-separated key=value
  // pairs (the cpu backend: its kernel sets, "float=avx2 int8=avx2"), for
  // applications, tests and profiles: Method::delegate_description. Valid
  // as long as the handle; "" (the default) says nothing.
  virtual const char* describe(const void* handle) const {
    (void)handle;
    return "";
  }
  // All of what init chose, describe()'s pairs first, for tools that show it
  // (tern-run --verbose, its --trace): space-separated key=value pairs
  // written into out as snprintf writes (at most `size` bytes with the
  // terminating NUL; out may be nullptr when size is 0). Returns the length
  // of the whole text: a buffer of that + 1 bytes takes it all. The cpu
  // backend adds each microkernel by kernel set and role, "float.igemm_main=
  // f32_igemm_ukernel_6x16__avx2 ... int8.dwconv=qs8_dwconv_ukernel__avx2".
  // The default writes describe()'s text. (Defined here, as every virtual
  // of this class: a key function in backend.cpp, built without RTTI, would
  // leave no typeinfo for backends that tests build with it.)
  virtual size_t describe_details(const void* handle, char* out, size_t size) const {
    const char* text = describe(handle);
    const size_t n = strlen(text);
    if (size > 0) {
      const size_t copied = n < size - 1 ? n : size - 1;
      memcpy(out, text, copied);
      out[copied] = '\0';
    }
    return n;
  }

 protected:
  ~Backend() = default;  // the registry never owns or deletes a backend
};

constexpr size_t kMaxBackends = 16;

// Adds a backend (it must outlive every method that uses it: a static
// object). InvalidArgument (logged) if its name is taken or kMaxBackends are
// registered. Not thread-safe: register at start-up.
Error register_backend(const Backend* backend);

// The backend registered as `name`, or nullptr.
const Backend* find_backend(const char* name);

// Every registered backend, in registration order.
Span<const Backend* const> registered_backends();

}  // namespace tern
