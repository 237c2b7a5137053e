#include "runtime/kernel/kernel.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/kernel/registry.h"

namespace tern {

Error PrepareContext::fail(Error e, const char* fmt, ...) {
  char msg[400];
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(msg, sizeof(msg), fmt, ap);
  va_end(ap);
  TERN_LOG_ERROR("instruction %u (%s): %s", instruction_, op_name_, msg);
  return e;
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

OpKernel g_kernels[kMaxKernels];
size_t g_num_kernels = 0;

// Compares "<name>.<overload>" (or "<name>" when overload is empty) with the
// registered full name, without building the joined string.
bool name_matches(const char* full, const char* name, const char* overload) {
  size_t n = strlen(name);
  if (strncmp(full, name, n) != 0) return false;
  if (overload == nullptr || overload[0] == '\0') return full[n] == '\0';
  return full[n] == '.' && strcmp(full + n + 1, overload) == 0;
}

}  // namespace

// All or nothing: checks every kernel before adding any.
Error register_kernels(Span<const OpKernel> kernels) {
  if (kernels.size() > kMaxKernels - g_num_kernels) {
    TERN_LOG_ERROR("register_kernels: %zu more kernels do not fit the table of %zu (%zu used)",
                   kernels.size(), kMaxKernels, g_num_kernels);
    return Error::InvalidArgument;
  }
  for (size_t j = 0; j < kernels.size(); ++j) {
    for (size_t i = 0; i < g_num_kernels + j; ++i) {
      const OpKernel& other = i < g_num_kernels ? g_kernels[i] : kernels[i - g_num_kernels];
      if (strcmp(other.name, kernels[j].name) == 0) {
        TERN_LOG_ERROR("register_kernels: %s is registered twice", kernels[j].name);
        return Error::InvalidArgument;
      }
    }
  }
  for (const OpKernel& k : kernels) g_kernels[g_num_kernels++] = k;
  return Error::Ok;
}

const OpKernel* find_kernel(const char* name, const char* overload) {
  for (size_t i = 0; i < g_num_kernels; ++i) {
    if (name_matches(g_kernels[i].name, name, overload)) return &g_kernels[i];
  }
  return nullptr;
}

Span<const OpKernel> registered_kernels() { return {g_kernels, g_num_kernels}; }

}  // namespace tern
