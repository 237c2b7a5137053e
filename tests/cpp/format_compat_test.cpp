// Files written by older exporters keep loading and giving the same answers,
// from C++ (tests/python/test_format_compat.py does the same from Python):
// every tests/data/v<N>/<name>.tern against its <name>.output<i>.npy, with
// the portable kernels, the cpu backend and the tern_test backend
// (test_backend.h) registered.
#include <gtest/gtest.h>
#include <dirent.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/module.h"
#include "extension/npy.h"
#include "kernels/portable/register.h"
#include "runtime/core/log.h"
#include "test_backend.h"
#include "tests/cpp/compare.h"

namespace tern {
namespace {

std::vector<std::string> list(const std::string& dir, const std::string& suffix) {
  std::vector<std::string> names;
  if (DIR* d = opendir(dir.c_str())) {
    while (dirent* e = readdir(d)) {
      std::string n = e->d_name;
      if (n.size() > suffix.size() && n.compare(n.size() - suffix.size(), suffix.size(), suffix) == 0) names.push_back(n);
    }
    closedir(d);
  }
  std::sort(names.begin(), names.end());
  return names;
}

// "<dir>/<name>.tern" for every frozen file.
std::vector<std::string> frozen_files() {
  const std::string data = TERN_TEST_DATA_DIR;
  std::vector<std::string> files;
  if (DIR* d = opendir(data.c_str())) {
    while (dirent* e = readdir(d)) {
      if (e->d_name[0] == 'v') {
        for (const std::string& f : list(data + "/" + e->d_name, ".tern")) files.push_back(data + "/" + e->d_name + "/" + f);
      }
    }
    closedir(d);
  }
  std::sort(files.begin(), files.end());
  return files;
}

std::vector<NpyArray> read_all(const std::string& stem, const char* kind) {
  std::vector<NpyArray> arrays;
  for (int i = 0;; ++i) {
    NpyArray a;
    if (read_npy((stem + "." + kind + std::to_string(i) + ".npy").c_str(), &a) != Error::Ok) break;
    arrays.push_back(std::move(a));
  }
  return arrays;
}

// What the frozen files run on: the portable kernels, the cpu backend and
// the tern_test backend (each registration idempotent).
void register_everything() {
  ASSERT_EQ(register_portable_kernels(), Error::Ok);
  ASSERT_EQ(register_cpu_backend(), Error::Ok);
  test::register_test_backend();
}

class FrozenFile : public ::testing::TestWithParam<std::string> {
 protected:
  static void SetUpTestSuite() { register_everything(); }
};

class FrozenFiles : public ::testing::Test {
 protected:
  static void SetUpTestSuite() { register_everything(); }
};

TEST_F(FrozenFiles, test_each_format_version_has_frozen_files) {
  std::vector<std::string> files = frozen_files();
  auto has = [&](const char* dir) {
    return std::any_of(files.begin(), files.end(), [&](const std::string& f) { return f.find(dir) != std::string::npos; });
  };
  EXPECT_TRUE(has("/v1/")) << "format 1.0";
  EXPECT_TRUE(has("/v1_1/")) << "format 1.1";
  EXPECT_TRUE(has("/v1_2/")) << "format 1.2";
  EXPECT_TRUE(has("/v1_3/")) << "format 1.3";
}

// Program.metadata as the exporter wrote it when it was new
// (tests/data/v1_3/make_metadata.py); the files older than it have none,
// those written after it at most the exporter's own ("tern." keys: the
// nodes a backend refused, python/tern/export.py REFUSALS_KEY).
TEST_F(FrozenFiles, test_metadata_reads_back_as_written) {
  for (const std::string& path : frozen_files()) {
    Module module;
    ASSERT_EQ(module.load(path.c_str(), Module::Options{Module::LoadMode::File, 1}), Error::Ok) << path;
    if (path.find("/metadata.tern") == std::string::npos) {
      for (size_t i = 0; i < module.num_metadata(); ++i) {
        EXPECT_EQ(std::string(module.metadata_key(i)).rfind("tern.", 0), 0u) << path;
      }
      continue;
    }
    ASSERT_EQ(module.num_metadata(), 4u);
    const std::string keys[] = {"app.table", "app.vocab", "empty", std::string(256, 'k')};
    for (size_t i = 0; i < 4; ++i) EXPECT_EQ(module.metadata_key(i), keys[i]);
    Result<Span<const uint8_t>> vocab = module.metadata("app.vocab");
    ASSERT_TRUE(vocab.ok());
    EXPECT_EQ(std::string(reinterpret_cast<const char*>(vocab->data()), vocab->size()), "\xc3\xa7" "a\n\xd0\xb4\xd0\xb5\n\xe6\x97\xa5\xe6\x9c\xac\n");
    Result<Span<const uint8_t>> table = module.metadata("app.table");
    ASSERT_TRUE(table.ok());
    ASSERT_EQ(table->size(), 1024u);
    for (size_t i = 0; i < table->size(); ++i) ASSERT_EQ((*table)[i], i % 256) << i;
    EXPECT_EQ(module.metadata("empty")->size(), 0u);
    EXPECT_EQ(module.metadata(keys[3].c_str())->size(), 11u);
  }
}

// Program.self_tests as the exporter wrote them when they were new
// (tests/data/v1_3/make_self_test.py): its four outputs pass; the other
// frozen files bundle none.
TEST_F(FrozenFiles, test_self_tests_run_as_written) {
  for (const std::string& path : frozen_files()) {
    Module module;
    ASSERT_EQ(module.load(path.c_str(), Module::Options{Module::LoadMode::File, 1}), Error::Ok) << path;
    if (path.find("/self_test.tern") == std::string::npos) {
      EXPECT_EQ(module.program().num_self_tests(), 0u) << path;
      continue;
    }
    size_t passed = 0;
    ASSERT_EQ(module.self_test([](const SelfTestRecord& r, void* n) { *static_cast<size_t*>(n) += r.passed; }, &passed),
              Error::Ok)
        << last_error_message();
    EXPECT_EQ(passed, 4u);
    ASSERT_EQ(module.program().num_self_tests(), 2u);
    EXPECT_EQ(module.program().self_test(1).expected(1).info.dtype, ScalarType::Int64);
    EXPECT_EQ(module.program().self_test(1).rtol(0), 1e-3);
  }
}

TEST_P(FrozenFile, test_gives_its_recorded_outputs) {
  const std::string stem = GetParam().substr(0, GetParam().size() - 5);
  std::vector<NpyArray> inputs = read_all(stem, "input"), want = read_all(stem, "output");
  ASSERT_FALSE(want.empty());
  for (int threads : {1, 2}) {
    Module module;
    ASSERT_EQ(module.load(GetParam().c_str(), Module::Options{Module::LoadMode::File, threads}), Error::Ok)
        << last_error_message();
    std::vector<Tensor> in;
    for (NpyArray& a : inputs) in.push_back(a.tensor());
    auto outs = module.forward({in.data(), in.size()});
    ASSERT_TRUE(outs.ok()) << last_error_message();
    ASSERT_EQ(outs->size(), want.size());
    for (size_t i = 0; i < want.size(); ++i) {
      const Tensor& got = (*outs)[i];
      Tensor w = want[i].tensor();
      ASSERT_TRUE(tensor_same_shape(got, w)) << "output " << i;
      if (got.dtype != ScalarType::Float32) {
        EXPECT_EQ(memcmp(got.data, w.data, w.nbytes()), 0) << "output " << i;
        continue;
      }
      EXPECT_TRUE(test::all_close(got.data_as<float>(), w.data_as<float>(), size_t(w.numel), 1e-4, -1,
                                  "output " + std::to_string(i) + " with " + std::to_string(threads) + " threads"));
    }
  }
}

std::string test_name(const ::testing::TestParamInfo<std::string>& info) {
  std::string s = info.param.substr(std::string(TERN_TEST_DATA_DIR).size() + 1);
  for (char& c : s) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return s;
}

INSTANTIATE_TEST_SUITE_P(Data, FrozenFile, ::testing::ValuesIn(frozen_files()), test_name);

}  // namespace
}  // namespace tern
