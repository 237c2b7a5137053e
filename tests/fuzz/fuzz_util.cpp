#include "fuzz_util.h"

#include <algorithm>

#include "backends/cpu/register.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"
#include "runtime/format/header.h"

namespace tern {
namespace fuzz {

void init_runtime() {
  static bool done = false;
  if (done) return;
  done = true;
  if (register_portable_kernels() != Error::Ok || register_cpu_backend() != Error::Ok) abort();
  enable_dynamic_shapes();
  set_log_level(LogLevel::Fatal);  // every refused input logs a line; the message is still kept
}

AlignedCopy::AlignedCopy(const uint8_t* data, size_t size) : size_(size) {
  // posix_memalign takes any size (aligned_alloc wants a multiple of the
  // alignment), so the block ends where the input does.
  void* p = nullptr;
  if (posix_memalign(&p, 64, size ? size : 1) != 0) abort();
  data_ = static_cast<uint8_t*>(p);
  if (size) memcpy(data_, data, size);
}

size_t file_part_size(const uint8_t* data, size_t size) {
  if (size < kHeaderSizeV1 || memcmp(data, "TERN", 4) != 0) return size;
  uint64_t file_size = 0;
  for (int i = 7; i >= 0; --i) file_size = (file_size << 8) | data[48 + i];
  return file_size >= kHeaderSizeV1 && file_size <= size ? static_cast<size_t>(file_size) : size;
}

size_t FuzzInput::init_and_measure(const uint8_t* data, size_t size) {
  init_runtime();
  return file_part_size(data, size);
}

FuzzInput::FuzzInput(const uint8_t* data, size_t size)
    : file_size_(init_and_measure(data, size)),
      file_(data, file_size_),
      loader_(file_.data(), file_.size()),
      program_(Program::load(loader_)),
      tail_(data + file_size_, size - file_size_) {
  record("Program::load", program_.error());
}

void TailReader::fill(void* out, size_t n) {
  if (n == 0) return;
  uint8_t* o = static_cast<uint8_t*>(out);
  if (pos_ >= size_) {
    memset(o, 0, n);
    return;
  }
  const uint8_t* src = data_ + pos_;
  const size_t avail = size_ - pos_;
  for (size_t done = 0; done < n;) {
    const size_t k = std::min(avail, n - done);
    memcpy(o + done, src, k);
    done += k;
  }
  pos_ = size_;
}

void* FuzzMemory::CappedHeap::allocate(size_t size, size_t alignment) {
  if (alignment == 0 || (alignment & (alignment - 1)) != 0) return nullptr;
  if (size > kMaxMethodBytes - used_) return nullptr;  // as a full arena would
  if (alignment < sizeof(void*)) alignment = sizeof(void*);
  void* p = nullptr;
  if (posix_memalign(&p, alignment, size ? size : 1) != 0) return nullptr;
  blocks_.push_back(p);
  used_ += size;
  return p;
}

void FuzzMemory::CappedHeap::reset() {
  for (void* p : blocks_) free(p);
  blocks_.clear();
  used_ = 0;
}

bool FuzzMemory::plan(const Program& program, const char* name) {
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) return false;
  uint64_t total = 0;
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    Result<uint64_t> n = meta->arena_size(i);
    if (!n.ok() || *n > kMaxPlannedBytes - total) return false;
    total += *n;
  }
  for (size_t i = 0; i < meta->num_arenas(); ++i) {
    const size_t n = static_cast<size_t>(*meta->arena_size(i));
    void* p = nullptr;
    if (posix_memalign(&p, 64, n ? n : 1) != 0) abort();
    memset(p, 0, n);
    arenas_.push_back(p);
    spans_.emplace_back(static_cast<uint8_t*>(p), n);
  }
  manager_.method_allocator = &heap_;
  manager_.planned = Span<const Span<uint8_t>>(spans_.data(), spans_.size());
  return true;
}

FuzzMemory::~FuzzMemory() {
  for (void* p : arenas_) free(p);
}

namespace {

// Bytes of one input's data buffer at most; larger requests keep the bound.
constexpr uint64_t kMaxInputBytes = uint64_t(16) << 20;

uint64_t saturating_numel(const Tensor& t) {
  uint64_t n = 1;
  for (int d = 0; d < t.dim; ++d) {
    if (t.sizes[d] < 0) return UINT64_MAX;
    const uint64_t s = static_cast<uint64_t>(t.sizes[d]);
    if (s != 0 && n > UINT64_MAX / s) return UINT64_MAX;
    n *= s;
  }
  return n;
}

}  // namespace

Error set_inputs_from_tail(const MethodMeta& meta, Method& m, TailReader& tail) {
  std::vector<uint8_t> buf;
  for (size_t i = 0; i < m.num_inputs(); ++i) {
    Tensor t = m.input(i);  // dtype and dims; sizes of the last call
    if (m.input_is_dynamic(i)) {
      // One byte per dim picks the size: 0..223 a size up to the planned
      // bound, else an arbitrary 64-bit value (to be refused unless it fits).
      for (int d = 0; d < t.dim; ++d) {
        const uint8_t pick = tail.u8();
        Result<DimRange> range = meta.input_dim_range(i, d);
        const int64_t bound = range.ok() ? range->max : t.sizes[d];
        if (pick < 224) {
          t.sizes[d] = bound > 0 ? static_cast<int64_t>(tail.u64() % static_cast<uint64_t>(bound + 1)) : bound;
        } else {
          t.sizes[d] = static_cast<int64_t>(tail.u64());
        }
      }
    }
    const uint64_t numel = saturating_numel(t);
    const uint64_t elem = scalar_type_size(t.dtype);
    if (numel > kMaxInputBytes / (elem ? elem : 1)) {
      // An application cannot hold that much data; it would not call.
      record_skip("input over the harness's cap");
      continue;
    }
    t.numel = static_cast<int64_t>(numel);
    buf.resize(static_cast<size_t>(numel * elem));
    tail.fill(buf.data(), buf.size());
    t.data = buf.data();
    Error e = record("set_input", m.set_input(i, t));
    if (e != Error::Ok) return e;
  }
  return Error::Ok;
}

uint64_t touch_outputs(const Method& m) {
  uint64_t sum = 0;
  for (size_t i = 0; i < m.num_outputs(); ++i) {
    const Tensor& t = m.output(i);
    const uint8_t* p = static_cast<const uint8_t*>(t.data);
    const size_t n = t.nbytes();
    for (size_t k = 0; k < n; ++k) sum += p[k];
  }
  return sum;
}

void load_methods(const Program& program, TailReader* tail, int execute_runs) {
  static volatile uint64_t sink = 0;
  for (size_t k = 0; k < program.num_methods(); ++k) {
    const char* name = program.method_name(k);
    FuzzMemory memory;
    if (!memory.plan(program, name)) {
      record_skip("planned memory over the harness's cap");
      continue;
    }
    MethodOptions options;
    options.threads = 1;
    options.max_loop_instructions = kMaxLoopInstructions;
    Result<Method> m = Method::load(program, name, memory.manager(), options);
    record("Method::load", m.error());
    if (m.ok() && tail == nullptr) record_completed();
    if (!m.ok() || tail == nullptr) continue;
    Result<MethodMeta> meta = program.method_meta(name);
    if (record("method_meta", meta.error()) != Error::Ok) continue;
    for (int run = 0; run < execute_runs; ++run) {
      if (set_inputs_from_tail(*meta, *m, *tail) != Error::Ok) break;
      if (record("execute", m->execute()) != Error::Ok) break;
      record_completed();
      sink = sink + touch_outputs(*m);
    }
  }
}

}  // namespace fuzz
}  // namespace tern
