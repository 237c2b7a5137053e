#include "extension/module.h"

#include <cstdint>
#include <cstring>
#include <new>

#include "extension/heap_allocator.h"
#include "extension/page_memory.h"
#include "runtime/core/log.h"
#include "runtime/core/cpu_info.h"

namespace tern {

Tensor make_tensor(void* data, ScalarType dtype, const int64_t* sizes, int dim) {
  Tensor t;
  t.data = data;
  t.dtype = dtype;
  if (dim < 0 || dim > kMaxDims) {
    // No Tensor holds it: one with dim -1 and no elements, which every
    // method input refuses and no loop over its dims reads.
    TERN_LOG_ERROR("make_tensor: %d dims, at most %d", dim, kMaxDims);
    t.dim = -1;
    t.numel = 0;
    return t;
  }
  t.dim = dim;
  t.numel = 1;
  for (int i = 0; i < dim; ++i) {
    t.sizes[i] = sizes[i];
    if (__builtin_mul_overflow(t.numel, sizes[i], &t.numel)) {
      // No buffer holds that many elements: refused like too many dims.
      TERN_LOG_ERROR("make_tensor: the sizes' product overflows int64 at dim %d", i);
      t.dim = -1;
      t.numel = 0;
      return t;
    }
  }
  return t;
}

Tensor make_tensor(void* data, ScalarType dtype, std::initializer_list<int64_t> sizes) {
  return make_tensor(data, dtype, sizes.begin(), static_cast<int>(sizes.size()));
}

namespace {

// `n` (at least one) value-initialized T from the heap, or nullptr with a log
// line naming the bytes. Freed with delete[].
template <typename T>
T* heap_array(size_t n, const char* what, const char* method) {
  const size_t count = n == 0 ? 1 : n;
  const bool fits = count <= SIZE_MAX / sizeof(T);
  T* p = fits ? new (std::nothrow) T[count]() : nullptr;
  if (p == nullptr) {
    TERN_LOG_ERROR("method '%s': out of memory for %zu bytes of %s", method, fits ? count * sizeof(T) : SIZE_MAX,
                   what);
  }
  return p;
}

// A new Loader in *out, opened on `path`.
template <typename Loader>
Error open_file(const char* path, std::unique_ptr<DataLoader>* out) {
  Loader* loader = new (std::nothrow) Loader();
  if (loader == nullptr) {
    TERN_LOG_ERROR("cannot load '%s': out of memory for %zu bytes of its loader", path, sizeof(Loader));
    return Error::OutOfMemory;
  }
  out->reset(loader);
  return loader->open(path);
}

}  // namespace

// One loaded method and the memory it runs in: planned arenas mapped from
// the OS and made resident at load (page_memory.h: so that the first run
// takes no page faults in them), and a HeapAllocator for its metadata.
struct Module::LoadedMethod {
  LoadedMethod* next = nullptr;
  char* name = nullptr;
  HeapAllocator allocator;
  PageMemory* arenas = nullptr;      // num_arenas mappings
  Span<uint8_t>* planned = nullptr;  // num_arenas views of them
  size_t num_arenas = 0;
  MemoryManager memory;
  std::optional<Method> method;
  Tensor* outputs = nullptr;  // the last run's, method->num_outputs() of them

  ~LoadedMethod() {
    method.reset();  // before the memory it points into
    delete[] outputs;
    delete[] arenas;
    delete[] planned;
    delete[] name;
  }

  // Everything the Method needs before it loads: the name and the arenas.
  Error init(const char* method_name, const MethodMeta& meta) {
    const size_t len = strlen(method_name) + 1;
    if ((name = heap_array<char>(len, "its name", method_name)) == nullptr) return Error::OutOfMemory;
    memcpy(name, method_name, len);
    if ((planned = heap_array<Span<uint8_t>>(meta.num_arenas(), "its arena list", name)) == nullptr ||
        (arenas = heap_array<PageMemory>(meta.num_arenas(), "its arena list", name)) == nullptr) {
      return Error::OutOfMemory;
    }
    // The arenas' sizes come from the file: made resident only when they fit
    // the budget together (page_memory.h), else mapped lazily.
    uint64_t total = 0;
    for (size_t i = 0; i < meta.num_arenas(); ++i) {
      const uint64_t want = *meta.arena_size(i);
      total = want > UINT64_MAX - total ? UINT64_MAX : total + want;
    }
    const bool prefault = total <= prefault_budget_bytes();
    for (size_t i = 0; i < meta.num_arenas(); ++i) {
      const uint64_t want = *meta.arena_size(i);
      if (want > SIZE_MAX - 63) {
        TERN_LOG_ERROR("method '%s': planned arena %zu of %llu bytes does not fit in memory", name, i,
                       (unsigned long long)want);
        return Error::OutOfMemory;
      }
      const size_t bytes = want == 0 ? 64 : (static_cast<size_t>(want) + 63) / 64 * 64;
      if (arenas[i].map(bytes, prefault) != Error::Ok) {
        TERN_LOG_ERROR("method '%s': out of memory for planned arena %zu (%zu bytes)", name, i, bytes);
        return Error::OutOfMemory;
      }
      planned[num_arenas++] = Span<uint8_t>(arenas[i].data(), bytes);
    }
    memory.method_allocator = &allocator;
    memory.planned = Span<const Span<uint8_t>>(planned, num_arenas);
    return Error::Ok;
  }
};

Module::Module() = default;
Module::~Module() { unload(); }

void Module::unload() {
  while (methods_ != nullptr) {
    LoadedMethod* next = methods_->next;
    delete methods_;
    methods_ = next;
  }
  program_.reset();
  loader_.reset();
}

Error Module::load(const char* path, const Options& options) {
  unload();
  const Error e = options.load_mode == LoadMode::Mmap ? open_file<MmapDataLoader>(path, &loader_)
                                                      : open_file<FileDataLoader>(path, &loader_);
  if (e != Error::Ok) {
    loader_.reset();
    return e;
  }
  return load_program(options);
}

Error Module::load_buffer(const void* data, size_t size, const Options& options) {
  unload();
  loader_.reset(new (std::nothrow) BufferDataLoader(data, size));
  if (loader_ == nullptr) {
    TERN_LOG_ERROR("cannot load a %zu-byte buffer: out of memory for %zu bytes of its loader", size,
                   sizeof(BufferDataLoader));
    return Error::OutOfMemory;
  }
  return load_program(options);
}

Error Module::load_program(const Options& options) {
  enable_dynamic_shapes();  // Module runs every file the exporter writes
  method_options_.threads = options.threads > 0 ? options.threads : physical_core_count();
  method_options_.max_loop_instructions = options.max_loop_instructions;
  Result<Program> program = Program::load(*loader_);
  if (!program.ok()) {
    unload();
    return program.error();
  }
  program_.emplace(std::move(*program));
  if (program_->method("forward") != nullptr) {
    Method* forward;
    const Error e = load_method("forward", &forward);  // logged by Method::load
    if (e != Error::Ok) {
      unload();  // nothing half-loaded stays behind
      return e;
    }
  }
  return Error::Ok;
}

Result<Span<const uint8_t>> Module::metadata(const char* key) const {
  if (!program_) {
    TERN_LOG_ERROR("Module::metadata('%s'): no program loaded", key);
    return Error::NotFound;
  }
  return program_->metadata(key);
}

Module::LoadedMethod* Module::find(const char* name) {
  for (LoadedMethod* m = methods_; m != nullptr; m = m->next) {
    if (strcmp(m->name, name) == 0) return m;
  }
  return nullptr;
}

Method* Module::method(const char* name) {
  Method* m = nullptr;
  (void)load_method(name, &m);
  return m;
}

Error Module::load_method(const char* name, Method** out) {
  *out = nullptr;
  if (!program_) {
    TERN_LOG_ERROR("Module::method('%s'): no program loaded", name);
    return Error::NotFound;
  }
  if (LoadedMethod* m = find(name)) {
    *out = &*m->method;
    return Error::Ok;
  }
  Result<MethodMeta> meta = program_->method_meta(name);
  if (!meta.ok()) return meta.error();
  std::unique_ptr<LoadedMethod> lm(new (std::nothrow) LoadedMethod());
  if (lm == nullptr) {
    TERN_LOG_ERROR("method '%s': out of memory for %zu bytes of its Module state", name, sizeof(LoadedMethod));
    return Error::OutOfMemory;
  }
  TERN_CHECK_OK(lm->init(name, *meta));
  Result<Method> m = Method::load(*program_, name, lm->memory, method_options_);
  if (!m.ok()) return m.error();
  lm->method.emplace(std::move(*m));
  if ((lm->outputs = heap_array<Tensor>(lm->method->num_outputs(), "its outputs", name)) == nullptr) {
    return Error::OutOfMemory;
  }
  for (size_t i = 0; i < lm->method->num_outputs(); ++i) lm->outputs[i] = lm->method->output(i);
  lm->next = methods_;
  methods_ = lm.release();
  *out = &*methods_->method;
  return Error::Ok;
}

Result<Span<const Tensor>> Module::run(const char* name, Span<const Tensor> inputs) {
  Method* m;
  TERN_CHECK_OK(load_method(name, &m));
  if (inputs.size() != m->num_inputs()) {
    TERN_LOG_ERROR("method '%s' takes %zu inputs, got %zu", name, m->num_inputs(), inputs.size());
    return Error::InvalidArgument;
  }
  for (size_t i = 0; i < inputs.size(); ++i) TERN_CHECK_OK(m->set_input(i, inputs[i]));
  TERN_CHECK_OK(m->execute());
  LoadedMethod* lm = find(name);
  // Sizes of this run (dynamic shapes, format 1.3, change them).
  for (size_t i = 0; i < m->num_outputs(); ++i) lm->outputs[i] = m->output(i);
  return Span<const Tensor>(lm->outputs, m->num_outputs());
}

}  // namespace tern
