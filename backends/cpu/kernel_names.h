// The names of a kernel set's microkernels, by role: the field that holds
// the function pointer ("igemm_main", "igemm[1]") and the function's name
// ("f32_igemm_ukernel_6x16__avx2"). isa.cpp records each name with the
// assignment that sets the pointer (TERN_CPU_USE), so a name cannot disagree
// with the function that runs; Backend::describe_details reports them
// (tern-run --verbose, its --trace).
//
//   for (int i = 0; i < isa.names.count; ++i)
//     printf("%s=%s\n", isa.names.at[i].role, isa.names.at[i].function);
//
// Filled in constant evaluation only (isa.cpp's tables are constexpr), read
// anywhere: immutable, thread-safe.
#pragma once

namespace tern {
namespace cpu {

struct KernelName {
  const char* role;      // the kernel set's field: "dwconv", "igemm[0]"
  const char* function;  // "f32_dwconv_ukernel__avx2"
};

// Equal C strings, in constant evaluation too.
constexpr bool same_name(const char* a, const char* b) {
  while (*a != '\0' && *a == *b) ++a, ++b;
  return *a == *b;
}

template <int N>
struct KernelNames {
  KernelName at[N] = {};
  int count = 0;

  // Records `function` as `role`'s, replacing the one an earlier set
  // recorded (an ISA starts from scalar's set and overrides). More than N
  // roles write past `at`: not a constant expression, so isa.cpp does not
  // compile until N grows.
  constexpr void set(const char* role, const char* function) {
    for (int i = 0; i < count; ++i) {
      if (same_name(at[i].role, role)) {
        at[i].function = function;
        return;
      }
    }
    at[count++] = {role, function};
  }

  // The function recorded for `role`, or nullptr.
  constexpr const char* of(const char* role) const {
    for (int i = 0; i < count; ++i) {
      if (same_name(at[i].role, role)) return at[i].function;
    }
    return nullptr;
  }
};

}  // namespace cpu
}  // namespace tern
