#include "runtime/backend/backend.h"

#include <cstring>

#include "runtime/core/log.h"

namespace tern {
namespace {

const Backend* g_backends[kMaxBackends];
size_t g_num_backends = 0;

}  // namespace

Error register_backend(const Backend* backend) {
  if (backend == nullptr || backend->name() == nullptr || backend->name()[0] == '\0') {
    TERN_LOG_ERROR("register_backend: a backend needs a name");
    return Error::InvalidArgument;
  }
  if (find_backend(backend->name()) != nullptr) {
    TERN_LOG_ERROR("register_backend: a backend named '%s' is registered already", backend->name());
    return Error::InvalidArgument;
  }
  if (g_num_backends == kMaxBackends) {
    TERN_LOG_ERROR("register_backend('%s'): %zu backends are registered already", backend->name(), kMaxBackends);
    return Error::InvalidArgument;
  }
  g_backends[g_num_backends++] = backend;
  return Error::Ok;
}

const Backend* find_backend(const char* name) {
  for (size_t i = 0; i < g_num_backends; ++i) {
    if (strcmp(g_backends[i]->name(), name) == 0) return g_backends[i];
  }
  return nullptr;
}

Span<const Backend* const> registered_backends() { return {g_backends, g_num_backends}; }

}  // namespace tern
