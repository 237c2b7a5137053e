#include "runtime/core/context.h"

#include <cstdarg>
#include <cstdio>
#include <cstring>

#include "runtime/core/log.h"
#include "runtime/core/memory_allocator.h"
#include "runtime/core/thread_pool.h"

namespace tern {

Error PrepareContext::fail(Error e, const char* fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(message_, sizeof(message_), fmt, ap);
  va_end(ap);
  return e;
}

void* PrepareContext::allocate(size_t bytes) {
  if (replay_ != nullptr) {
    if (replayed_ >= num_blocks_ || replay_[replayed_].bytes < bytes) {
      (void)fail(Error::OutOfMemory, "needs %zu persistent bytes in allocation %d at these shapes, more than "
                 "at the shapes' upper bounds", bytes, replayed_);
      return nullptr;
    }
    return replay_[replayed_++].data;
  }
  void* p = allocator_ ? allocator_->allocate(bytes == 0 ? 1 : bytes, 64) : nullptr;
  if (p == nullptr) {
    (void)fail(Error::OutOfMemory, "the method allocator is out of memory for %zu persistent bytes "
               "(%zu of %zu bytes used)", bytes, allocator_ ? allocator_->used() : 0,
               allocator_ ? allocator_->capacity() : 0);
    return nullptr;
  }
  persistent_ += bytes;
  if (num_blocks_ < kMaxBlocks) blocks_[num_blocks_] = Block{p, bytes};
  ++num_blocks_;
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

}  // namespace tern
