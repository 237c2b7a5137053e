#include "runtime/kernel/registry.h"

#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"

namespace tern {

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
