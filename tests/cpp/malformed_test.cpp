// The malformed-file corpus (tests/data/malformed/): every file there is
// listed in its MANIFEST.txt with the step that must refuse it
// (Program::load, Method::load or execute), the Error and a substring of the
// error message; the steps before it must succeed. Each file is loaded the
// way an application loads one (tern::Module's steps: the portable kernels,
// the cpu backend and dynamic shapes on, arenas sized from MethodMeta), from
// a buffer of exactly its size, so that ASan sees a read past its end.
//
// The generated files must be byte for byte what their recipes
// (malformed_files.h) build, so the corpus can be regenerated and reviewed.
#include <gtest/gtest.h>

#include <algorithm>
#include <cctype>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include "backends/cpu/register.h"
#include "extension/heap_allocator.h"
#include "kernels/portable/register.h"
#include "malformed_files.h"
#include "runtime/core/data_loader.h"
#include "runtime/core/log.h"
#include "runtime/executor/method.h"
#include "runtime/executor/program.h"

namespace tern {
namespace {

using test::AlignedBytes;

const std::string kDir = std::string(TERN_TEST_DATA_DIR) + "/malformed";

// One line of MANIFEST.txt: file | step | error | message | origin | what is wrong.
struct Entry {
  std::string file, step, error, message, origin, what;
  int line = 0;
};

std::string trim(const std::string& s) {
  size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

// The entries, or an empty list and the reason in `problem`.
std::vector<Entry> read_manifest(std::string* problem) {
  std::ifstream in(kDir + "/MANIFEST.txt");
  if (!in) {
    *problem = "cannot read " + kDir + "/MANIFEST.txt";
    return {};
  }
  std::vector<Entry> entries;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::vector<std::string> f;
    for (size_t start = 0;;) {
      size_t bar = line.find(" | ", start);
      f.push_back(trim(line.substr(start, bar == std::string::npos ? std::string::npos : bar - start)));
      if (bar == std::string::npos) break;
      start = bar + 3;
    }
    if (f.size() != 6 || f[0].empty() || f[3].empty() || f[5].empty()) {
      *problem = "MANIFEST.txt line " + std::to_string(n) + ": expected 6 fields separated by \" | \"";
      return {};
    }
    entries.push_back({f[0], f[1], f[2], f[3], f[4], f[5], n});
  }
  return entries;
}

// gtest prints a failing case's entry by its file name.
void PrintTo(const Entry& e, std::ostream* os) { *os << e.file; }

const std::vector<Entry>& manifest() {
  static std::string problem;
  static const std::vector<Entry> entries = read_manifest(&problem);
  return entries;
}

AlignedBytes read_bytes(const std::string& path, bool* ok) {
  std::ifstream in(path, std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  *ok = static_cast<bool>(in) || in.eof();
  return AlignedBytes(bytes.data(), bytes.size());
}

// Where a file stopped: the step that failed ("" if none did), its Error and message.
struct Outcome {
  std::string step;
  Error error = Error::Ok;
  std::string message;
};

Outcome failed(const char* step, Error e) { return {step, e, last_error_message()}; }

// The largest arena the test gives a method; a file that needs more must be
// refused before (Program::load bounds arena sizes).
constexpr uint64_t kMaxTestArena = uint64_t(1) << 30;

Outcome run_method(const Program& program, const char* name) {
  Result<MethodMeta> meta = program.method_meta(name);
  if (!meta.ok()) return failed("method_meta", meta.error());
  std::vector<AlignedBytes> arenas;
  for (size_t a = 0; a < meta->num_arenas(); ++a) {
    const uint64_t size = *meta->arena_size(a);
    if (size > kMaxTestArena) {
      return {"test", Error::OutOfMemory, "Program::load accepted arena " + std::to_string(a) + " of " +
                                              std::to_string(size) + " bytes"};
    }
    arenas.emplace_back(static_cast<size_t>(size));
  }
  std::vector<Span<uint8_t>> spans;
  for (AlignedBytes& a : arenas) spans.emplace_back(a.data(), a.size());
  HeapAllocator allocator;
  MemoryManager memory{&allocator, Span<const Span<uint8_t>>(spans.data(), spans.size())};
  Result<Method> m = Method::load(program, name, memory);
  if (!m.ok()) return failed("Method::load", m.error());
  for (size_t i = 0; i < m->num_inputs(); ++i) {
    std::vector<uint8_t> zeros(m->input(i).nbytes());
    Error e = m->set_input(i, zeros.data(), zeros.size());
    if (e != Error::Ok) return failed("set_input", e);
  }
  Error e = m->execute();
  if (e != Error::Ok) return failed("execute", e);
  return {};
}

Outcome run_file(const AlignedBytes& bytes) {
  static const bool ready = register_portable_kernels() == Error::Ok && register_cpu_backend() == Error::Ok;
  if (!ready) return {"test", Error::NotSupported, "cannot register the kernels or the cpu backend"};
  enable_dynamic_shapes();
  clear_last_error();
  BufferDataLoader loader(bytes.data(), bytes.size());
  Result<Program> program = Program::load(loader);
  if (!program.ok()) return failed("Program::load", program.error());
  for (size_t i = 0; i < program->num_methods(); ++i) {
    Outcome o = run_method(*program, program->method_name(i));
    if (o.error != Error::Ok) return o;
  }
  return {};
}

class Quiet : public ::testing::Test {
 protected:
  void SetUp() override { set_log_level(LogLevel::Fatal); }  // expected refusals; the checks print the message
  void TearDown() override { set_log_level(LogLevel::Info); }
};

class MalformedFile : public ::testing::WithParamInterface<Entry>, public Quiet {};

TEST_P(MalformedFile, test_file_is_refused_at_its_step_with_its_error_and_message) {
  const Entry& e = GetParam();
  SCOPED_TRACE("MANIFEST.txt line " + std::to_string(e.line) + ": " + e.file + ": " + e.what);
  bool ok = false;
  AlignedBytes bytes = read_bytes(kDir + "/" + e.file, &ok);
  ASSERT_TRUE(ok && bytes.size() > 0) << "cannot read " << e.file;
  const Outcome o = run_file(bytes);
  ASSERT_NE(o.error, Error::Ok) << "the runtime accepted the file: loaded, and ran with zeroed inputs";
  EXPECT_EQ(o.step, e.step) << o.message;
  EXPECT_EQ(error_name(o.error), e.error) << o.message;
  EXPECT_NE(o.message.find(e.message), std::string::npos)
      << "the message \"" << o.message << "\" does not contain \"" << e.message << "\"";
}

std::string test_name(const ::testing::TestParamInfo<Entry>& info) {
  std::string name = info.param.file.substr(0, info.param.file.rfind(".tern"));
  for (char& c : name) {
    if (!isalnum(static_cast<unsigned char>(c))) c = '_';
  }
  return name;
}

INSTANTIATE_TEST_SUITE_P(Corpus, MalformedFile, ::testing::ValuesIn(manifest()), test_name);

TEST(MalformedCorpus, test_manifest_lists_every_file_once_with_a_known_step_error_and_origin) {
  std::string problem;
  const std::vector<Entry> entries = read_manifest(&problem);
  ASSERT_EQ(problem, "");
  EXPECT_GE(entries.size(), 32u);
  const std::set<std::string> steps = {"Program::load", "Method::load", "execute"};
  std::set<std::string> listed;
  for (const Entry& e : entries) {
    EXPECT_TRUE(listed.insert(e.file).second) << e.file << " is listed twice";
    EXPECT_TRUE(steps.count(e.step)) << e.file << ": unknown step " << e.step;
    bool known_error = false;
    for (int k = 1; k <= static_cast<int>(Error::NotSupported); ++k) {
      known_error |= e.error == error_name(static_cast<Error>(k));
    }
    EXPECT_TRUE(known_error) << e.file << ": unknown Error " << e.error;
    EXPECT_TRUE(e.origin == "generated" || e.origin.rfind("fuzz:", 0) == 0) << e.file << ": origin " << e.origin;
    EXPECT_TRUE(std::filesystem::is_regular_file(kDir + "/" + e.file)) << e.file << " is listed but missing";
  }
  for (const auto& f : std::filesystem::directory_iterator(kDir)) {
    const std::string name = f.path().filename().string();
    if (name == "MANIFEST.txt" || name == "README.md") continue;
    EXPECT_TRUE(listed.count(name)) << name << " is in tests/data/malformed/ but not in its MANIFEST.txt";
  }
}

TEST(MalformedCorpus, test_generated_files_are_what_their_recipes_build) {
  std::set<std::string> generated;
  for (const Entry& e : manifest()) {
    if (e.origin == "generated") generated.insert(e.file);
  }
  std::set<std::string> recipes;
  for (const test::malformed::Recipe& r : test::malformed::recipes()) {
    recipes.insert(r.file);
    EXPECT_TRUE(generated.count(r.file)) << r.file << ": a recipe without a \"generated\" line in MANIFEST.txt";
    bool ok = false;
    const AlignedBytes committed = read_bytes(kDir + "/" + r.file, &ok);
    const AlignedBytes built = r.build();
    EXPECT_TRUE(ok && committed.size() == built.size() && memcmp(committed.data(), built.data(), built.size()) == 0)
        << r.file << " differs from what its recipe builds: run build/tests/cpp/make_malformed tests/data/malformed";
  }
  for (const std::string& f : generated) EXPECT_TRUE(recipes.count(f)) << f << " is \"generated\" but has no recipe";
}

class MalformedRecipes : public Quiet {};

// The programs the recipes break, unbroken: they load and run, so each
// file's refusal comes from its break.
TEST_F(MalformedRecipes, test_unbroken_programs_load_and_run) {
  namespace mf = test::malformed;
  const AlignedBytes files[] = {
      mf::add_file(), mf::cpu_file(), mf::state_file([](test::MethodBuilder::StateSpec&) {}),
      mf::dynamic_file([](test::MethodBuilder&) {}), mf::self_test_file([](mf::SelfTestSpec&) {})};
  for (const AlignedBytes& f : files) {
    const Outcome o = run_file(f);
    EXPECT_EQ(o.error, Error::Ok) << o.step << ": " << o.message;
  }
}

}  // namespace
}  // namespace tern
