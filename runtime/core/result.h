// Result<T>: a value or an Error, for functions that can fail. No exceptions.
//
//   Result<Program> p = Program::load(loader);
//   if (!p.ok()) return p.error();
//   Program& program = *p;
#pragma once

#include <new>
#include <type_traits>
#include <utility>

#include "runtime/core/error.h"
#include "runtime/core/log.h"

namespace tern {

template <typename T>
class [[nodiscard]] Result {
 public:
  Result(const T& value) : error_(Error::Ok) { new (&storage_) T(value); }
  Result(T&& value) : error_(Error::Ok) { new (&storage_) T(std::move(value)); }
  Result(Error error) : error_(error) {
    if (error == Error::Ok) {
      TERN_ABORT("Result constructed from Error::Ok without a value");
    }
  }
  Result(Result&& other) : error_(other.error_) {
    if (ok()) new (&storage_) T(std::move(other.get()));
  }
  Result(const Result&) = delete;
  Result& operator=(const Result&) = delete;
  Result& operator=(Result&&) = delete;
  ~Result() {
    if (ok()) get().~T();
  }

  bool ok() const { return error_ == Error::Ok; }
  Error error() const { return error_; }

  T& get() {
    if (!ok()) TERN_ABORT("Result::get() on an error: %s", error_name(error_));
    return *std::launder(reinterpret_cast<T*>(&storage_));
  }
  const T& get() const {
    if (!ok()) TERN_ABORT("Result::get() on an error: %s", error_name(error_));
    return *std::launder(reinterpret_cast<const T*>(&storage_));
  }
  T& operator*() { return get(); }
  const T& operator*() const { return get(); }
  T* operator->() { return &get(); }
  const T* operator->() const { return &get(); }

 private:
  Error error_;
  alignas(T) unsigned char storage_[sizeof(T)];
};

}  // namespace tern

// Evaluates `expr` (a Result<T>); returns its error from the enclosing function
// if it failed, else moves its value into `lhs` (a declaration or an lvalue).
#define TERN_ASSIGN_OR_RETURN(lhs, expr)                         \
  TERN_ASSIGN_OR_RETURN_IMPL_(TERN_CONCAT_(tern_res_, __LINE__), lhs, expr)
#define TERN_CONCAT_INNER_(a, b) a##b
#define TERN_CONCAT_(a, b) TERN_CONCAT_INNER_(a, b)
#define TERN_ASSIGN_OR_RETURN_IMPL_(res, lhs, expr) \
  auto res = (expr);                                \
  if (!res.ok()) return res.error();                \
  lhs = std::move(res.get())
