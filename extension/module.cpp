#include "extension/module.h"

#include <cstdlib>
#include <cstring>

#include "extension/heap_allocator.h"
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

struct Module::LoadedMethod {
  std::string name;
  HeapAllocator allocator;
  std::vector<void*> arenas;  // aligned_alloc'ed, freed in the destructor
  std::vector<Span<uint8_t>> planned;
  MemoryManager memory;
  std::optional<Method> method;
  std::vector<Tensor> outputs;

  ~LoadedMethod() {
    for (void* a : arenas) free(a);
  }
};

Module::Module() = default;
Module::~Module() = default;

Error Module::load(const char* path, const Options& options) {
  methods_.clear();
  program_.reset();
  if (options.load_mode == LoadMode::Mmap) {
    auto loader = std::make_unique<MmapDataLoader>();
    TERN_CHECK_OK(loader->open(path));
    loader_ = std::move(loader);
  } else {
    auto loader = std::make_unique<FileDataLoader>();
    TERN_CHECK_OK(loader->open(path));
    loader_ = std::move(loader);
  }
  return load_program(options);
}

Error Module::load_buffer(const void* data, size_t size, const Options& options) {
  methods_.clear();
  program_.reset();
  loader_ = std::make_unique<BufferDataLoader>(data, size);
  return load_program(options);
}

Error Module::load_program(const Options& options) {
  enable_dynamic_shapes();  // Module runs every file the exporter writes
  method_options_.threads = options.threads > 0 ? options.threads : physical_core_count();
  method_options_.max_loop_instructions = options.max_loop_instructions;
  Result<Program> program = Program::load(*loader_);
  if (!program.ok()) return program.error();
  program_.emplace(std::move(*program));
  if (program_->method("forward") != nullptr) {
    Method* forward;
    TERN_CHECK_OK(load_method("forward", &forward));  // logged by Method::load
  }
  return Error::Ok;
}

Module::LoadedMethod* Module::find(const char* name) {
  for (auto& m : methods_) {
    if (m->name == name) return m.get();
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
  auto lm = std::make_unique<LoadedMethod>();
  lm->name = name;
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    const uint64_t want = *meta->arena_size(i);
    if (want > SIZE_MAX - 63) {
      TERN_LOG_ERROR("method '%s': planned arena %zu of %llu bytes does not fit in memory", name, i,
                     (unsigned long long)want);
      return Error::OutOfMemory;
    }
    size_t bytes = (static_cast<size_t>(want) + 63) / 64 * 64;
    void* a = aligned_alloc(64, bytes == 0 ? 64 : bytes);
    if (a == nullptr) {
      TERN_LOG_ERROR("method '%s': cannot allocate planned arena %zu (%zu bytes)", name, i, bytes);
      return Error::OutOfMemory;
    }
    lm->arenas.push_back(a);
    lm->planned.emplace_back(static_cast<uint8_t*>(a), bytes);
  }
  lm->memory.method_allocator = &lm->allocator;
  lm->memory.planned = Span<const Span<uint8_t>>(lm->planned.data(), lm->planned.size());
  Result<Method> m = Method::load(*program_, name, lm->memory, method_options_);
  if (!m.ok()) return m.error();
  lm->method.emplace(std::move(*m));
  for (size_t i = 0; i < lm->method->num_outputs(); ++i) lm->outputs.push_back(lm->method->output(i));
  methods_.push_back(std::move(lm));
  *out = &*methods_.back()->method;
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
  for (size_t i = 0; i < lm->outputs.size(); ++i) lm->outputs[i] = m->output(i);
  return Span<const Tensor>(lm->outputs.data(), lm->outputs.size());
}

}  // namespace tern
