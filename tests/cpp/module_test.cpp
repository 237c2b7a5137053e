// Module (extension/module.h): load a .tern file from disk and run it.
// The application registers kernels, not Module: this suite registers the
// portable library and the test kernels once.
#include <gtest/gtest.h>

#include <sys/mman.h>
#include <unistd.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "extension/module.h"
#include "runtime_test_util.h"

// Under ASan, let a huge allocation fail with nullptr, as the C library does,
// instead of aborting (test_huge_arena_is_an_error_not_a_crash).
extern "C" const char* __asan_default_options() { return "allocator_may_return_null=1"; }

namespace tern {
namespace {

using namespace test;

class TempFile {
 public:
  explicit TempFile(const AlignedBytes& b) : path_(write_temp_file(b.data(), b.size(), "tern_module")) {}
  ~TempFile() { unlink(path_.c_str()); }
  const char* path() const { return path_.c_str(); }

 private:
  std::string path_;
};

// forward(x [2, 3]) = relu(x) + 1, then "scaled" = relu(x) * 3 in a second method.
ProgramBuilder relu_program(const char* second_op = "test::scale") {
  ProgramBuilder pb;
  relu_add_one_method(pb.method("forward"));
  MethodBuilder& s = pb.method("scaled");
  uint32_t a = s.arena(64);
  uint32_t sx = s.planned(ScalarType::Float32, {2}, 0, a);
  uint32_t sy = s.planned(ScalarType::Float32, {2}, 32, a);
  s.call(second_op, "", {sx, s.int_value(3), sy});
  s.inputs = {sx};
  s.outputs = {sy};
  return pb;
}

class ModuleTest : public ::testing::Test {
 protected:
  static void SetUpTestSuite() {
    register_test_kernels();
    ASSERT_EQ(register_portable_kernels(), Error::Ok);
  }
};

TEST_F(ModuleTest, test_load_and_forward_from_a_file) {
  TempFile f(relu_program().build());
  for (Module::LoadMode mode : {Module::LoadMode::Mmap, Module::LoadMode::File}) {
    Module module;
    ASSERT_EQ(module.load(f.path(), mode), Error::Ok) << last_error_message();
    EXPECT_EQ(module.program().num_methods(), 2u);
    float x[6] = {-1, 2, -3, 4, 0, 0.5f};
    Tensor input = make_tensor(x, ScalarType::Float32, {2, 3});
    Result<Span<const Tensor>> out = module.forward({&input, 1});
    ASSERT_TRUE(out.ok()) << last_error_message();
    ASSERT_EQ(out->size(), 1u);
    const Tensor& y = (*out)[0];
    EXPECT_EQ(y.dim, 2);
    EXPECT_EQ(y.sizes[1], 3);
    EXPECT_EQ(floats(y), (std::vector<float>{1, 3, 1, 5, 1, 1.5f}));
    // Run again: outputs are rewritten in place.
    float x2[6] = {1, 1, 1, 1, 1, 1};
    input = make_tensor(x2, ScalarType::Float32, {2, 3});
    Result<Span<const Tensor>> again = module.forward({&input, 1});
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(floats((*again)[0]), (std::vector<float>(6, 2)));
    EXPECT_EQ((*again)[0].data, y.data) << "the same planned memory";
  }
}

TEST_F(ModuleTest, test_load_and_forward_from_a_buffer) {
  const AlignedBytes bytes = relu_program().build();
  Module module;
  ASSERT_EQ(module.load_buffer(bytes.data(), bytes.size(), {Module::LoadMode::Mmap, 1}), Error::Ok)
      << last_error_message();
  float x[6] = {-1, 2, -3, 4, 0, 0.5f};
  Tensor input = make_tensor(x, ScalarType::Float32, {2, 3});
  Result<Span<const Tensor>> out = module.forward({&input, 1});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(floats((*out)[0]), (std::vector<float>{1, 3, 1, 5, 1, 1.5f}));
  // a damaged buffer is refused as a damaged file is
  AlignedBytes bad = bytes;
  bad[bad.size() / 2] ^= 0x5a;
  EXPECT_EQ(module.load_buffer(bad.data(), bad.size(), {Module::LoadMode::Mmap, 1}), Error::ChecksumMismatch);
}

TEST_F(ModuleTest, test_run_a_second_method_by_name) {
  TempFile f(relu_program().build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok) << last_error_message();
  float x[2] = {1, -2};
  Tensor input = make_tensor(x, ScalarType::Float32, {2});
  Result<Span<const Tensor>> out = module.run("scaled", {&input, 1});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ(floats((*out)[0]), (std::vector<float>{3, -6}));
  EXPECT_EQ(module.method("scaled"), module.method("scaled")) << "loaded once";
}

TEST_F(ModuleTest, test_wrong_inputs_are_invalid_argument) {
  TempFile f(relu_program().build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok);
  float x[6] = {};
  Tensor wrong_shape = make_tensor(x, ScalarType::Float32, {3, 2});
  EXPECT_EQ(module.forward({&wrong_shape, 1}).error(), Error::InvalidArgument);
  Tensor wrong_dtype = make_tensor(x, ScalarType::Int32, {2, 3});
  EXPECT_EQ(module.forward({&wrong_dtype, 1}).error(), Error::InvalidArgument);
  EXPECT_EQ(module.forward({}).error(), Error::InvalidArgument);
}

TEST_F(ModuleTest, test_a_tensor_of_more_than_8_dims_is_refused_not_cut) {
  // make_tensor used to keep dim 9 with 8 sizes filled: whoever looped over
  // the dims read past sizes.
  const int64_t sizes[9] = {1, 1, 1, 1, 1, 1, 1, 1, 6};
  float x[6] = {};
  Tensor nine = make_tensor(x, ScalarType::Float32, sizes, 9);
  EXPECT_EQ(nine.dim, -1);
  EXPECT_EQ(nine.numel, 0);
  EXPECT_NE(std::string(last_error_message()).find("make_tensor: 9 dims, at most 8"), std::string::npos);
  Tensor negative = make_tensor(x, ScalarType::Float32, sizes, -3);
  EXPECT_EQ(negative.dim, -1);
  TempFile f(relu_program().build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok);
  EXPECT_EQ(module.forward({&nine, 1}).error(), Error::InvalidArgument);
  Tensor eight = make_tensor(x, ScalarType::Float32, sizes + 1, 8);
  EXPECT_EQ(eight.dim, 8);
  EXPECT_EQ(eight.numel, 6);
}

TEST_F(ModuleTest, test_sizes_whose_product_overflows_are_refused) {
  // Two dims of 2^32 multiply to 2^64: int64 overflow, undefined behaviour
  // before make_tensor checked it (UBSan in the fuzz_module harness).
  const int64_t sizes[3] = {int64_t(1) << 32, int64_t(1) << 32, 0};
  float x[1] = {};
  Tensor t = make_tensor(x, ScalarType::Float32, sizes, 3);
  EXPECT_EQ(t.dim, -1);
  EXPECT_EQ(t.numel, 0);
  EXPECT_NE(std::string(last_error_message()).find("overflows int64 at dim 1"), std::string::npos);
  Tensor zero = make_tensor(x, ScalarType::Float32, sizes + 1, 2);  // 2^32 x 0: fine
  EXPECT_EQ(zero.dim, 2);
  EXPECT_EQ(zero.numel, 0);
}

TEST_F(ModuleTest, test_missing_method_is_not_found) {
  TempFile f(relu_program().build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok);
  EXPECT_EQ(module.method("backward"), nullptr);
  EXPECT_EQ(module.run("backward", {}).error(), Error::NotFound);
}

TEST_F(ModuleTest, test_missing_file_is_access_failed) {
  Module module;
  EXPECT_EQ(module.load("/nonexistent/model.tern"), Error::AccessFailed);
  EXPECT_EQ(module.load("/nonexistent/model.tern", Module::LoadMode::File), Error::AccessFailed);
  EXPECT_EQ(module.method("forward"), nullptr);
}

TEST_F(ModuleTest, test_corrupted_file_is_checksum_mismatch) {
  AlignedBytes b = relu_program().build();
  b[read_le(b, header_pos::kFlatbufferOffset, 8) + 20] ^= 0x10;
  TempFile f(b);
  Module module;
  EXPECT_EQ(module.load(f.path()), Error::ChecksumMismatch);
}

TEST_F(ModuleTest, test_unknown_operator_in_forward_is_operator_missing) {
  ProgramBuilder pb = relu_program();
  pb.methods()[0].operators[1].name = "test::not_registered";
  TempFile f(pb.build());
  Module module;
  EXPECT_EQ(module.load(f.path()), Error::OperatorMissing) << "the Method::load error, not a generic one";
  EXPECT_NE(std::string(last_error_message()).find("test::not_registered"), std::string::npos);
}

TEST_F(ModuleTest, test_method_that_fails_to_load_reports_its_error) {
  TempFile f(relu_program("test::not_registered").build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok) << "forward loads; 'scaled' is loaded on first use";
  float x[2] = {};
  Tensor input = make_tensor(x, ScalarType::Float32, {2});
  EXPECT_EQ(module.run("scaled", {&input, 1}).error(), Error::OperatorMissing);
}

TEST_F(ModuleTest, test_huge_arena_is_an_error_not_a_crash) {
  // Up to 2^48 bytes a file may ask for (no memory has them: OutOfMemory);
  // above, Program::load refuses the file.
  for (uint64_t arena_bytes : {UINT64_MAX - 10, uint64_t(1) << 62, uint64_t(1) << 48}) {
    ProgramBuilder pb;
    MethodBuilder& m = pb.method("forward");
    uint32_t arena = m.arena(arena_bytes);
    uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
    uint32_t y = m.planned(ScalarType::Float32, {1}, 32, arena);
    m.call("test::add_one", "", {x, y});
    m.inputs = {x};
    TempFile f(pb.build());
    Module module;
    Error e = module.load(f.path());
    EXPECT_EQ(e, arena_bytes > (uint64_t(1) << 48) ? Error::InvalidProgram : Error::OutOfMemory) << arena_bytes;
  }
}

TEST_F(ModuleTest, test_load_makes_the_planned_arenas_resident_before_the_first_run) {
  // forward(x) = x + 1 with x at the start and the output at the end of an
  // 8 MiB arena: the first run writes the output's page; load() has made it
  // (and every page between) resident already (page_memory.h).
  const size_t arena_bytes = size_t(8) << 20;
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(arena_bytes);
  uint32_t x = m.planned(ScalarType::Float32, {4}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {4}, arena_bytes - 64, arena);
  m.call("test::add_one", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  TempFile f(pb.build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok) << last_error_message();
  const Tensor& out = module.method()->output(0);
  const size_t page = static_cast<size_t>(sysconf(_SC_PAGESIZE));
  uint8_t* first = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(module.method()->input(0).data) / page * page);
  uint8_t* last = reinterpret_cast<uint8_t*>(reinterpret_cast<uintptr_t>(out.data) / page * page);
  const size_t pages = static_cast<size_t>(last - first) / page + 1;
  ASSERT_GE(pages, arena_bytes / page);
#if defined(__APPLE__)
  std::vector<char> resident(pages);
#else
  std::vector<unsigned char> resident(pages);
#endif
  if (mincore(first, pages * page, resident.data()) != 0) GTEST_SKIP() << "mincore() failed";
  size_t count = 0;
  for (auto r : resident) count += (r & 1) != 0;
  EXPECT_EQ(count, pages) << "pages of the arena not resident after load";
  float in[4] = {1, 2, 3, 4};
  Tensor input = make_tensor(in, ScalarType::Float32, {4});
  Result<Span<const Tensor>> outs = module.forward({&input, 1});
  ASSERT_TRUE(outs.ok()) << last_error_message();
  EXPECT_EQ((*outs)[0].data_as<float>()[3], 5.0f);
}

TEST_F(ModuleTest, test_reload_replaces_the_program) {
  TempFile a(relu_program().build());
  ProgramBuilder pb;
  MethodBuilder& m = pb.method("forward");
  uint32_t arena = m.arena(64);
  uint32_t x = m.planned(ScalarType::Float32, {1}, 0, arena);
  uint32_t y = m.planned(ScalarType::Float32, {1}, 32, arena);
  m.call("test::add_one", "", {x, y});
  m.inputs = {x};
  m.outputs = {y};
  TempFile b(pb.build());
  Module module;
  ASSERT_EQ(module.load(a.path()), Error::Ok);
  ASSERT_EQ(module.load(b.path()), Error::Ok);
  EXPECT_EQ(module.program().num_methods(), 1u);
  float v = 41;
  Tensor input = make_tensor(&v, ScalarType::Float32, {1});
  Result<Span<const Tensor>> out = module.forward({&input, 1});
  ASSERT_TRUE(out.ok()) << last_error_message();
  EXPECT_EQ((*out)[0].data_as<float>()[0], 42);
}

// Program.metadata: named byte strings beside the model, read back as views
// into the loaded file.
std::string text(Span<const uint8_t> v) { return std::string(reinterpret_cast<const char*>(v.data()), v.size()); }

TEST_F(ModuleTest, test_metadata_round_trips_as_views_into_the_file) {
  ProgramBuilder pb = relu_program();
  std::vector<uint8_t> big(100000);
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<uint8_t>(i * 7);
  pb.metadata = {{"a", {}}, {"langid.labels", {'e', 'n', '\n', 'f', 'r'}}, {"langid.vocab", big}};
  const AlignedBytes bytes = pb.build();
  TempFile f(bytes);
  for (Module::LoadMode mode : {Module::LoadMode::Mmap, Module::LoadMode::File}) {
    Module module;
    ASSERT_EQ(module.load(f.path(), mode), Error::Ok) << last_error_message();
    ASSERT_EQ(module.num_metadata(), 3u);
    EXPECT_STREQ(module.metadata_key(0), "a");
    EXPECT_STREQ(module.metadata_key(1), "langid.labels");
    EXPECT_STREQ(module.metadata_key(2), "langid.vocab");
    Result<Span<const uint8_t>> labels = module.metadata("langid.labels");
    ASSERT_TRUE(labels.ok()) << last_error_message();
    EXPECT_EQ(text(*labels), "en\nfr");
    Result<Span<const uint8_t>> vocab = module.metadata("langid.vocab");
    ASSERT_TRUE(vocab.ok());
    EXPECT_EQ(std::vector<uint8_t>(vocab->begin(), vocab->end()), big);
    Result<Span<const uint8_t>> empty = module.metadata("a");
    ASSERT_TRUE(empty.ok());
    EXPECT_EQ(empty->size(), 0u);
    EXPECT_EQ(module.program().metadata_value(2).data(), vocab->data());
  }
  // A view into the caller's buffer: no copy.
  Module module;
  ASSERT_EQ(module.load_buffer(bytes.data(), bytes.size(), {Module::LoadMode::Mmap, 1}), Error::Ok);
  Result<Span<const uint8_t>> labels = module.metadata("langid.labels");
  ASSERT_TRUE(labels.ok());
  EXPECT_GE(labels->data(), bytes.data());
  EXPECT_LT(labels->data(), bytes.data() + bytes.size());
}

TEST_F(ModuleTest, test_missing_metadata_key_is_not_found_and_named) {
  ProgramBuilder pb = relu_program();
  pb.metadata = {{"b", {1}}, {"d", {2}}};
  TempFile f(pb.build());
  Module module;
  ASSERT_EQ(module.load(f.path()), Error::Ok) << last_error_message();
  for (const char* key : {"a", "c", "e", "", "bb", "d.x"}) {
    clear_last_error();
    Result<Span<const uint8_t>> v = module.metadata(key);
    EXPECT_EQ(v.error(), Error::NotFound) << key;
    EXPECT_NE(std::string(last_error_message()).find("no metadata '" + std::string(key) + "'"), std::string::npos)
        << last_error_message();
  }
  EXPECT_EQ(text(*module.metadata("d")), std::string(1, '\2'));
}

TEST_F(ModuleTest, test_file_without_metadata_has_none) {
  TempFile f(relu_program().build());
  Module module;
  EXPECT_EQ(module.num_metadata(), 0u) << "nothing loaded yet";
  EXPECT_EQ(module.metadata("x").error(), Error::NotFound);
  ASSERT_EQ(module.load(f.path()), Error::Ok);
  EXPECT_EQ(module.num_metadata(), 0u);
  EXPECT_EQ(module.metadata("langid.vocab").error(), Error::NotFound);
}

// Each break of Program.metadata is refused at load with the entry named
// (the corpus in tests/data/malformed/ keeps two of them as files).
TEST_F(ModuleTest, test_malformed_metadata_is_refused_naming_the_entry) {
  struct Case {
    std::vector<std::pair<std::string, std::vector<uint8_t>>> metadata;
    const char* message;
  };
  std::vector<std::pair<std::string, std::vector<uint8_t>>> too_many;
  for (int i = 0; i < 1025; ++i) {
    char key[16];
    snprintf(key, sizeof(key), "k%05d", i);
    too_many.push_back({key, {}});
  }
  const Case cases[] = {
      {{{"a", {1}}, {"a", {2}}}, "metadata entry 1: key 'a' appears twice (entries 0 and 1)"},
      {{{"b", {}}, {"a", {}}}, "metadata entry 1: key 'a' is not after 'b'"},
      {{{"ab", {}}, {"a", {}}}, "key 'a' is not after 'ab'"},
      {{{"", {}}}, "metadata entry 0: key missing, empty or longer than 256 bytes (0)"},
      {{{"a", {}}, {std::string(257, 'k'), {}}}, "metadata entry 1: key missing, empty or longer than 256 bytes (257)"},
      {{{std::string("a\0b", 3), {}}}, "metadata entry 0: key contains a NUL byte"},
      {too_many, "metadata: 1025 entries, at most 1024"},
  };
  for (const Case& c : cases) {
    ProgramBuilder pb = relu_program();
    pb.metadata = c.metadata;
    TempFile f(pb.build());
    Module module;
    clear_last_error();
    EXPECT_EQ(module.load(f.path()), Error::InvalidProgram) << c.message;
    EXPECT_NE(std::string(last_error_message()).find(c.message), std::string::npos)
        << "want: " << c.message << "\ngot:  " << last_error_message();
  }
  // At the limits: 1024 entries, a 256-byte key.
  too_many.pop_back();
  too_many.back().first = std::string(256, 'z');
  ProgramBuilder pb = relu_program();
  pb.metadata = too_many;
  TempFile f(pb.build());
  Module module;
  EXPECT_EQ(module.load(f.path()), Error::Ok) << last_error_message();
  EXPECT_EQ(module.num_metadata(), 1024u);
}

}  // namespace
}  // namespace tern
