#include "runtime/kernel/kernel.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/kernel/registry.h"
#include "runtime/platform/thread_pool.h"

namespace tern {

Error PrepareContext::fail(Error e, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message_, sizeof(message_), fmt, ap);
  va_end(ap);
  return e;
}

void* PrepareContext::allocate(size_t bytes) {
  void* p = allocator_ ? allocator_->allocate(bytes == 0 ? 1 : bytes, 64) : nullptr;
  if (p == nullptr) {
    (void)fail(Error::OutOfMemory, "the method allocator is out of memory for %zu persistent bytes "
               "(%zu of %zu bytes used)", bytes, allocator_ ? allocator_->used() : 0,
               allocator_ ? allocator_->capacity() : 0);
    return nullptr;
  }
  persistent_ += bytes;
  return p;
}

Error PrepareContext::expect_arg_count(Span<EValue* const> args, size_t n) {
  if (args.size() != n) {
    return fail(Error::InvalidProgram, "expected %zu arguments (with outs), got %zu", n, args.size());
  }
  return Error::Ok;
}

Error PrepareContext::expect_tag(Span<EValue* const> args, size_t i, Tag tag) {
  if (i >= args.size()) {
    return fail(Error::InvalidProgram, "argument %zu missing (have %zu)", i, args.size());
  }
  if (args[i]->tag != tag) {
    return fail(Error::InvalidProgram, "argument %zu must be %s, got %s", i, tag_name(tag),
                tag_name(args[i]->tag));
  }
  return Error::Ok;
}

Error PrepareContext::expect_tensor(Span<EValue* const> args, size_t i) {
  return expect_tag(args, i, Tag::Tensor);
}

namespace {

// One parallel region: the parent context and the body to run per task.
struct Region {
  const RunContext* parent;
  void (*fn)(RunContext&, void*);
  void* body;
};

}  // namespace

void RunContext::parallel_impl(BodyFn fn, void* body, int tasks) {
  if (pool_ == nullptr || nested_ || tasks <= 1) {
    // Inline, one task after the other. Nested: every task keeps this
    // thread's scratch (the other indices' scratch is in use by their threads).
    for (int t = 0; t < tasks; ++t) {
      RunContext c = *this;
      c.thread_index_ = t;
      c.scratch_index_ = nested_ ? scratch_index_ : t;
      c.nested_ = true;
      fn(c, body);
    }
    return;
  }
  Region region{this, fn, body};
  pool_->run(tasks, [](void* arg, int t) {
    const Region& r = *static_cast<const Region*>(arg);
    RunContext c = *r.parent;
    c.thread_index_ = t;
    c.scratch_index_ = t;
    c.nested_ = true;
    r.fn(c, r.body);
  }, &region);
}

// ---------------------------------------------------------------------------
// The registry

namespace {

KernelLibrary g_libraries[kMaxKernelLibraries];  // most preferred first
size_t g_num_libraries = 0;
char g_user_names[kMaxKernelLibraries][12];
size_t g_num_user = 0;

// Compares "<name>.<overload>" (or "<name>" when overload is empty) with the
// registered full name, without building the joined string.
bool name_matches(const char* full, const char* name, const char* overload) {
  size_t n = strlen(name);
  if (strncmp(full, name, n) != 0) return false;
  if (overload == nullptr || overload[0] == '\0') return full[n] == '\0';
  return full[n] == '.' && strcmp(full + n + 1, overload) == 0;
}

bool takes_dtype(const OpKernel& k, const ScalarType* dtype) {
  return dtype == nullptr || k.dtypes == kAnyDtype || (k.dtypes & dtype_bit(*dtype)) != 0;
}

Error check_library(const KernelLibrary& lib) {
  if (lib.name == nullptr || find_kernel_library(lib.name) != nullptr) {
    TERN_LOG_ERROR("register_kernel_library: the name %s is %s", lib.name ? lib.name : "(null)",
                   lib.name ? "taken" : "missing");
    return Error::InvalidArgument;
  }
  if (g_num_libraries == kMaxKernelLibraries) {
    TERN_LOG_ERROR("register_kernel_library(%s): %zu libraries are registered already", lib.name,
                   kMaxKernelLibraries);
    return Error::InvalidArgument;
  }
  for (size_t j = 0; j < lib.kernels.size(); ++j) {
    for (size_t i = 0; i < j; ++i) {
      if (strcmp(lib.kernels[i].name, lib.kernels[j].name) == 0) {
        TERN_LOG_ERROR("register_kernel_library(%s): %s appears twice", lib.name, lib.kernels[j].name);
        return Error::InvalidArgument;
      }
    }
  }
  return Error::Ok;
}

}  // namespace

Error register_kernel_library(const KernelLibrary& library) {
  TERN_CHECK_OK(check_library(library));
  // Insert after every library of the same or higher priority: stable.
  size_t at = 0;
  while (at < g_num_libraries && g_libraries[at].priority >= library.priority) ++at;
  for (size_t i = g_num_libraries; i > at; --i) g_libraries[i] = g_libraries[i - 1];
  g_libraries[at] = library;
  ++g_num_libraries;
  return Error::Ok;
}

Span<const KernelLibrary> kernel_libraries() { return {g_libraries, g_num_libraries}; }

const KernelLibrary* find_kernel_library(const char* name) {
  for (size_t i = 0; i < g_num_libraries; ++i) {
    if (strcmp(g_libraries[i].name, name) == 0) return &g_libraries[i];
  }
  return nullptr;
}

size_t find_kernels(const char* name, const char* overload, const ScalarType* dtype,
                    const OpKernel** out, size_t max) {
  size_t found = 0;
  for (size_t l = 0; l < g_num_libraries && found < max; ++l) {
    for (const OpKernel& k : g_libraries[l].kernels) {
      if (name_matches(k.name, name, overload)) {
        if (takes_dtype(k, dtype)) out[found++] = &k;
        break;
      }
    }
  }
  return found;
}

const OpKernel* find_kernel(const char* name, const char* overload) {
  const OpKernel* k = nullptr;
  return find_kernels(name, overload, nullptr, &k, 1) ? k : nullptr;
}

const OpKernel* find_kernel_in(const KernelLibrary& library, const char* full_name) {
  for (const OpKernel& k : library.kernels) {
    if (strcmp(k.name, full_name) == 0) return &k;
  }
  return nullptr;
}

const KernelLibrary* library_of(const OpKernel& kernel) {
  for (size_t i = 0; i < g_num_libraries; ++i) {
    const Span<const OpKernel>& ks = g_libraries[i].kernels;
    if (&kernel >= ks.begin() && &kernel < ks.end()) return &g_libraries[i];
  }
  return nullptr;
}

Error register_kernels(Span<const OpKernel> kernels) {
  if (g_num_user == kMaxKernelLibraries) return Error::InvalidArgument;
  char* name = g_user_names[g_num_user];
  snprintf(name, sizeof(g_user_names[0]), "user%zu", g_num_user);
  TERN_CHECK_OK(register_kernel_library({name, kPortablePriority + 1, kernels}));
  ++g_num_user;
  return Error::Ok;
}

}  // namespace tern
