// Which kernel sets the cpu backend runs (backends/cpu/isa.cpp): what
// TERN_CPU_ISA forces, the three distinct refusals (this CPU lacks it, this
// build has no such kernels, no such ISA), and that a loaded method reports
// the sets its delegates chose (Method::delegate_description) and each
// microkernel by name (Method::delegate_details, kernel_names.h).
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <string>

#include "backends/cpu/isa.h"
#include "backends/cpu/register.h"
#include "backends/cpu/ukernels/qb.h"
#include "backends/cpu/ukernels/qs8.h"
#include "extension/module.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"

namespace tern {
namespace cpu {
namespace {

bool supported_isa(const char* name) {
  const Isa* isas[kMaxKernelSets];
  const int n = supported_isas(isas, kMaxKernelSets);
  for (int i = 0; i < n; ++i) {
    if (strcmp(isas[i]->name, name) == 0) return true;
  }
  return false;
}

bool supported_qs8(const char* name) {
  const Qs8Kernels* sets[kMaxKernelSets];
  const int n = supported_qs8_kernels(sets, kMaxKernelSets);
  for (int i = 0; i < n; ++i) {
    if (strcmp(sets[i]->name, name) == 0) return true;
  }
  return false;
}

bool contains(const char* text, const char* part) { return strstr(text, part) != nullptr; }

// (TERN_CPU_ISA, float set, int8 set, int8 set on CPUs without the int8 extension or nullptr)
struct Expected {
  const char* forced;
  const char* isa;
  const char* qs8;
  const char* qs8_fallback;
  bool this_arch;
};
#if defined(__x86_64__)
constexpr bool kX86 = true;
#else
constexpr bool kX86 = false;
#endif
#if defined(__aarch64__)
constexpr bool kArm = true;
#else
constexpr bool kArm = false;
#endif
const Expected kExpected[] = {
    {"scalar", "scalar", "scalar", nullptr, true},   {"avx2", "avx2", "avx2", nullptr, kX86},
    {"avx512", "avx512", "avx512vnni", "avx2", kX86}, {"amx", "avx512", "amx", nullptr, kX86},
    {"neon", "neon", "neondot", "scalar", kArm},
};

TEST(CpuIsa, test_without_tern_cpu_isa_the_best_sets_are_chosen) {
  const KernelChoice c = choose_kernels(nullptr);
  const Isa* best_isa;
  const Qs8Kernels* best_qs8;
  ASSERT_GE(supported_isas(&best_isa, 1), 1);
  ASSERT_GE(supported_qs8_kernels(&best_qs8, 1), 1);
  EXPECT_EQ(c.isa, best_isa);
  EXPECT_EQ(c.qs8, best_qs8);
  EXPECT_STREQ(c.refusal, "");
  EXPECT_EQ(choose_kernels("").isa, best_isa);
}

TEST(CpuIsa, test_each_forced_isa_is_chosen_or_refused_because_this_cpu_lacks_it) {
  for (const Expected& e : kExpected) {
    const KernelChoice c = choose_kernels(e.forced);
    // Every ISA of this architecture is in this build: never "compiled out".
    EXPECT_FALSE(contains(c.refusal, "compiled out")) << c.refusal;
    const bool cpu_has = e.this_arch && supported_isa(e.isa) &&
                         (supported_qs8(e.qs8) || (e.qs8_fallback != nullptr && supported_qs8(e.qs8_fallback)));
    if (!cpu_has) {
      EXPECT_EQ(c.isa, nullptr) << e.forced;
      EXPECT_EQ(c.qs8, nullptr) << e.forced;
      EXPECT_EQ(std::string(c.refusal).rfind(std::string("TERN_CPU_ISA=") + e.forced + ": this CPU lacks it (", 0), 0u)
          << c.refusal;
      continue;
    }
    ASSERT_NE(c.isa, nullptr) << c.refusal;
    ASSERT_NE(c.qs8, nullptr) << c.refusal;
    EXPECT_STREQ(c.isa->name, e.isa);
    EXPECT_STREQ(c.qs8->name, supported_qs8(e.qs8) ? e.qs8 : e.qs8_fallback);
    EXPECT_STREQ(c.refusal, "");
  }
}

TEST(CpuIsa, test_another_architectures_isa_is_one_this_cpu_lacks) {
  const KernelChoice c = choose_kernels(kX86 ? "neon" : "avx2");
  EXPECT_EQ(c.isa, nullptr);
  EXPECT_TRUE(contains(c.refusal, "this CPU lacks it (an ")) << c.refusal;
  EXPECT_TRUE(contains(c.refusal, kX86 ? "an aarch64 ISA" : "an x86-64 ISA")) << c.refusal;
}

TEST(CpuIsa, test_an_unknown_name_is_no_such_isa) {
  for (const char* name : {"avx3", "avx512vnni", "neondot", "SCALAR", "scalar "}) {
    const KernelChoice c = choose_kernels(name);
    EXPECT_EQ(c.isa, nullptr) << name;
    EXPECT_EQ(c.qs8, nullptr) << name;
    EXPECT_EQ(std::string(c.refusal), std::string("TERN_CPU_ISA=") + name +
                                          ": no such ISA (scalar, avx2, avx512, amx, neon)");
  }
  const std::string longest(300, 'x');  // the refusal stays within its buffer
  EXPECT_TRUE(contains(choose_kernels(longest.c_str()).refusal, ": no such ISA"));
}

TEST(CpuIsa, test_select_functions_follow_tern_cpu_isa) {
  set_log_level(LogLevel::Fatal);
  setenv("TERN_CPU_ISA", "scalar", 1);
  EXPECT_STREQ(select_isa()->name, "scalar");
  EXPECT_STREQ(select_qs8_kernels()->name, "scalar");
  setenv("TERN_CPU_ISA", "avx3", 1);
  EXPECT_EQ(select_isa(), nullptr);
  EXPECT_EQ(select_qs8_kernels(), nullptr);
  unsetenv("TERN_CPU_ISA");
  EXPECT_EQ(select_isa(), choose_kernels(nullptr).isa);
  set_log_level(LogLevel::Info);
}

// ---------------------------------------------------------------- loaded methods

class CpuIsaMethod : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
    ASSERT_EQ(register_cpu_backend(), Error::Ok);
  }
  void TearDown() override { unsetenv("TERN_CPU_ISA"); }

  // The description of the one delegate of `file`'s forward, loaded with
  // TERN_CPU_ISA=forced (nullptr: unset); "" and the error if it fails to load.
  static std::string describe(const char* file, const char* forced, Error* error = nullptr) {
    if (forced) setenv("TERN_CPU_ISA", forced, 1);
    else unsetenv("TERN_CPU_ISA");
    Module module;
    const Error e = module.load((std::string(TERN_TEST_DATA_DIR) + "/v1_1/" + file).c_str());
    if (error) *error = e;
    if (e != Error::Ok) return "";
    Method* m = module.method();
    EXPECT_EQ(m->num_delegates(), 1u);
    EXPECT_STREQ(m->delegate_backend(0), "cpu");
    EXPECT_STREQ(m->delegate_backend(1), "");
    EXPECT_STREQ(m->delegate_description(1), "");
    return m->delegate_description(0);
  }
};

TEST_F(CpuIsaMethod, test_a_loaded_method_reports_the_kernel_sets_it_runs) {
  for (const char* file : {"cpu_block.tern", "cpu_qs8.tern"}) {
    EXPECT_EQ(describe(file, "scalar"), "float=scalar int8=scalar") << file;
    const KernelChoice best = choose_kernels(nullptr);
    EXPECT_EQ(describe(file, nullptr), std::string("float=") + best.isa->name + " int8=" + best.qs8->name) << file;
    for (const Expected& e : kExpected) {
      const KernelChoice c = choose_kernels(e.forced);
      if (c.isa == nullptr) continue;
      EXPECT_EQ(describe(file, e.forced), std::string("float=") + c.isa->name + " int8=" + c.qs8->name) << file;
    }
  }
}

TEST_F(CpuIsaMethod, test_a_refused_isa_fails_the_load_with_its_reason) {
  set_log_level(LogLevel::Fatal);
  Error e = Error::Ok;
  EXPECT_EQ(describe("cpu_block.tern", "avx3", &e), "");
  EXPECT_EQ(e, Error::NotSupported);
  EXPECT_TRUE(contains(last_error_message(), "TERN_CPU_ISA=avx3: no such ISA")) << last_error_message();
  const char* foreign = kX86 ? "neon" : "avx2";
  EXPECT_EQ(describe("cpu_block.tern", foreign, &e), "");
  EXPECT_EQ(e, Error::NotSupported);
  EXPECT_TRUE(contains(last_error_message(), ": this CPU lacks it (")) << last_error_message();
  set_log_level(LogLevel::Info);
}

TEST_F(CpuIsaMethod, test_a_loaded_method_names_each_microkernel_it_runs) {
  for (const Expected& e : kExpected) {
    const KernelChoice c = choose_kernels(e.forced);
    if (c.isa == nullptr) continue;
    setenv("TERN_CPU_ISA", e.forced, 1);
    Module module;
    ASSERT_EQ(module.load((std::string(TERN_TEST_DATA_DIR) + "/v1_1/cpu_qs8.tern").c_str()), Error::Ok);
    const Method& m = *module.method();
    std::string details(m.delegate_details(0, nullptr, 0), '\0');
    ASSERT_EQ(m.delegate_details(0, &details[0], details.size() + 1), details.size());
    // describe()'s pairs first, then each kernel by set and role
    EXPECT_EQ(details.rfind(std::string(m.delegate_description(0)) + " ", 0), 0u) << details;
    for (int i = 0; i < c.isa->names.count; ++i) {
      const KernelName& k = c.isa->names.at[i];
      EXPECT_TRUE(contains(details.c_str(), (std::string(" float.") + k.role + "=" + k.function).c_str())) << details;
    }
    for (int i = 0; i < c.qs8->names.count; ++i) {
      const KernelName& k = c.qs8->names.at[i];
      EXPECT_TRUE(contains(details.c_str(), (std::string(" int8.") + k.role + "=" + k.function).c_str())) << details;
    }
    const QbKernels& qb = qb_kernels_for(c.qs8->name);  // BlockLinear's
    for (int i = 0; i < qb.names.count; ++i) {
      const KernelName& k = qb.names.at[i];
      EXPECT_TRUE(contains(details.c_str(), (std::string(" qb.") + k.role + "=" + k.function).c_str())) << details;
    }
    // a short buffer takes what fits, NUL-terminated, and learns the length
    char head[11];
    EXPECT_EQ(m.delegate_details(0, head, sizeof(head)), details.size());
    EXPECT_EQ(std::string(head), details.substr(0, 10));
    EXPECT_EQ(m.delegate_details(1, head, sizeof(head)), 0u);  // no such delegate
    EXPECT_STREQ(head, "");
  }
}

// ---------------------------------------------------------------- kernel names

bool ends_with(const char* s, const std::string& tail) {
  return s != nullptr && strlen(s) >= tail.size() && strcmp(s + strlen(s) - tail.size(), tail.c_str()) == 0;
}

// Each float set names its 11 kernels by their fields, every one its own
// (no ISA keeps a scalar float kernel); scalar is the last set.
TEST(CpuIsa, test_every_float_kernel_set_names_each_of_its_kernels) {
  const Isa* isas[kMaxKernelSets];
  const int n = supported_isas(isas, kMaxKernelSets);
  ASSERT_GE(n, 1);
  EXPECT_STREQ(isas[n - 1]->name, "scalar");
  for (const Isa* k : Span<const Isa* const>(isas, size_t(n))) {
    EXPECT_EQ(k->names.count, 11) << k->name;
    for (const char* role : {"igemm_main", "igemm_tail", "igemm_row", "dwconv", "dwconv_rows", "vact", "pool",
                             "winograd_in", "winograd_out", "attn_dots", "attn_wsum"}) {
      EXPECT_TRUE(ends_with(k->names.of(role), std::string("__") + k->name)) << k->name << " " << role;
    }
  }
}

// Each int8 set names the kernels it holds and no others: igemm[p] up to its
// panels, begin and end where it has them.
TEST(CpuIsa, test_every_int8_kernel_set_names_the_kernels_it_holds) {
  const Qs8Kernels* sets[kMaxKernelSets];
  const int n = supported_qs8_kernels(sets, kMaxKernelSets);
  ASSERT_GE(n, 1);
  EXPECT_STREQ(sets[n - 1]->name, "scalar");
  for (const Qs8Kernels* k : Span<const Qs8Kernels* const>(sets, size_t(n))) {
    for (int p = 0; p < 4; ++p) {
      const std::string igemm = "igemm[" + std::to_string(p) + "]", f32 = "igemm_f32[" + std::to_string(p) + "]";
      EXPECT_EQ(k->names.of(igemm.c_str()) != nullptr, k->igemm[p] != nullptr) << k->name << " " << igemm;
      EXPECT_EQ(k->names.of(f32.c_str()) != nullptr, k->igemm_f32[p] != nullptr) << k->name << " " << f32;
      EXPECT_EQ(k->igemm[p] != nullptr, p < k->panels) << k->name << " " << igemm;
    }
    EXPECT_TRUE(ends_with(k->names.of("igemm[0]"), std::string("__") + k->name)) << k->name;
    for (const char* role : {"dwconv", "quantize", "binary", "minmax", "pool"}) EXPECT_NE(k->names.of(role), nullptr);
    EXPECT_EQ(k->names.of("begin") != nullptr, k->begin != nullptr) << k->name;
    EXPECT_EQ(k->names.of("end") != nullptr, k->end != nullptr) << k->name;
  }
}

}  // namespace
}  // namespace cpu
}  // namespace tern
