// The .npy reader and writer (extension/npy.h). The file is untrusted, as a
// .tern file is: every malformed header is refused with InvalidArgument and a
// message that names the file and what was wrong, through both entry points
// (read_npy_buffer on bytes in memory, read_npy on a file), and nothing is
// allocated from a size the file claims before it is checked.
#include <gtest/gtest.h>

#include <dirent.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "extension/npy.h"
#include "runtime/core/log.h"

namespace tern {
namespace {

// The preamble numpy writes: magic, version, header length (2 bytes in
// version 1, 4 in versions 2 and 3), little-endian.
std::string preamble(int major, uint32_t header_len) {
  std::string p("\x93NUMPY", 6);
  p += static_cast<char>(major);
  p += '\0';
  const int len_bytes = major == 1 ? 2 : 4;
  for (int i = 0; i < len_bytes; ++i) p += static_cast<char>((header_len >> (8 * i)) & 0xFF);
  return p;
}

// A file as numpy writes it: the dict padded with spaces and ended by '\n' so
// that the data starts 64-byte aligned, then the data.
std::string npy(const std::string& dict, const std::string& data = "", int major = 1) {
  const size_t pre = major == 1 ? 10 : 12;
  std::string h = dict;
  h.append((64 - (pre + h.size() + 1) % 64) % 64, ' ');
  h += '\n';
  return preamble(major, static_cast<uint32_t>(h.size())) + h + data;
}

std::string dict(const char* descr, const char* shape) {
  return std::string("{'descr': '") + descr + "', 'fortran_order': False, 'shape': " + shape + ", }";
}

std::string temp_path(const char* stem) {
  const char* dir = getenv("TMPDIR");
  return std::string(dir && dir[0] ? dir : "/tmp") + "/" + stem + "_" + std::to_string(getpid()) + ".npy";
}

// One way in: read_npy_buffer on the bytes (named "x.npy"), or read_npy on a
// temporary file holding them.
struct Reader {
  const char* what;
  Error (*read)(const std::string& bytes, NpyArray* out, std::string* name);
};

Error via_buffer(const std::string& bytes, NpyArray* out, std::string* name) {
  *name = "x.npy";
  return read_npy_buffer(reinterpret_cast<const uint8_t*>(bytes.data()), bytes.size(), "x.npy", out);
}

Error via_file(const std::string& bytes, NpyArray* out, std::string* name) {
  *name = temp_path("tern_npy_test");
  FILE* f = fopen(name->c_str(), "wb");
  if (f == nullptr || fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size()) abort();
  fclose(f);
  Error e = read_npy(name->c_str(), out);
  unlink(name->c_str());
  return e;
}

const Reader kReaders[] = {{"read_npy_buffer", via_buffer}, {"read_npy", via_file}};

// Both readers refuse `bytes` with InvalidArgument and a message naming the
// file and containing `why`.
void expect_refused(const std::string& bytes, const char* why) {
  for (const Reader& r : kReaders) {
    SCOPED_TRACE(r.what);
    clear_last_error();
    NpyArray a;
    std::string name;
    EXPECT_EQ(r.read(bytes, &a, &name), Error::InvalidArgument);
    const std::string msg = last_error_message();
    EXPECT_NE(msg.find("'" + name + "'"), std::string::npos) << msg;
    EXPECT_NE(msg.find(why), std::string::npos) << "wanted \"" << why << "\" in: " << msg;
  }
}

// Both readers read `bytes` as an array of `dtype` and `sizes` holding `data`.
void expect_read(const std::string& bytes, ScalarType dtype, const std::vector<int64_t>& sizes,
                 const std::string& data) {
  for (const Reader& r : kReaders) {
    SCOPED_TRACE(r.what);
    NpyArray a;
    std::string name;
    ASSERT_EQ(r.read(bytes, &a, &name), Error::Ok) << last_error_message();
    EXPECT_EQ(a.dtype, dtype);
    EXPECT_EQ(a.sizes, sizes);
    ASSERT_EQ(a.data.size(), data.size());
    EXPECT_EQ(std::string(a.data.begin(), a.data.end()), data);
    const Tensor t = a.tensor();
    EXPECT_EQ(t.dim, static_cast<int32_t>(sizes.size()));
    int64_t numel = 1;
    for (size_t d = 0; d < sizes.size(); ++d) {
      EXPECT_EQ(t.sizes[d], sizes[d]);
      numel *= sizes[d];
    }
    EXPECT_EQ(t.numel, numel);
    EXPECT_EQ(t.nbytes(), data.size());
  }
}

std::string file_bytes(const std::string& path) {
  std::string bytes;
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return bytes;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) bytes.append(buf, n);
  fclose(f);
  return bytes;
}

std::string bytes_of(size_t n) {
  std::string s(n, '\0');
  for (size_t i = 0; i < n; ++i) s[i] = static_cast<char>(i * 37 + 1);
  return s;
}

// --- the four defects of issue 22 ---------------------------------------------

TEST(NpyRead, test_more_than_8_dims_is_refused_before_tensor_writes_past_sizes) {
  expect_refused(npy(dict("<f4", "(1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1)"), bytes_of(4)), "12 dims, at most 8");
}

TEST(NpyRead, test_negative_dim_is_refused_without_throwing) {
  expect_refused(npy(dict("<f4", "(2, -3)"), bytes_of(24)), "dim 1 is -3");
}

TEST(NpyRead, test_shape_whose_product_overflows_is_refused) {
  // 2^32 * 2^32 * 4 bytes wraps to 0 in 64 bits.
  expect_refused(npy(dict("<f4", "(4294967296, 4294967296)")), "more than 2^48 bytes");
  // Also when a 0 makes the array empty: strides would still overflow.
  expect_refused(npy(dict("<f4", "(0, 4294967296, 4294967296)")), "more than 2^48 bytes");
  expect_refused(npy(dict("<f4", "(99999999999999999999,)")), "dim 0 is larger than");
}

TEST(NpyRead, test_v2_header_length_of_4_gib_is_refused_before_allocating) {
  std::string h = dict("<f4", "(1,)") + "\n";
  expect_refused(preamble(2, 0xFFFFFFFFu) + h + bytes_of(4), "header of 4294967295 bytes, at most 65536");
}

// --- sizes against the file ----------------------------------------------------

TEST(NpyRead, test_header_length_past_the_end_of_the_file_is_refused) {
  std::string h = dict("<f4", "(1,)") + "\n";
  expect_refused(preamble(1, 1000) + h, "header of 1000 bytes runs past the end");
}

TEST(NpyRead, test_data_shorter_than_the_shape_is_refused) {
  expect_refused(npy(dict("<f4", "(2, 3)"), bytes_of(10)), "needs 24 data bytes, the file has 10");
}

TEST(NpyRead, test_data_claimed_in_terabytes_is_refused_before_allocating) {
  // 2^40 floats (4 TiB): under the 2^48 bound, far over what the file holds.
  expect_refused(npy(dict("<f4", "(1048576, 1048576)"), bytes_of(16)),
                 "needs 4398046511104 data bytes, the file has 16");
}

TEST(NpyRead, test_truncated_preamble_or_wrong_magic_or_version_is_refused) {
  expect_refused("", "not a .npy file");
  expect_refused(std::string("\x93NUMPY\x01", 7), "not a .npy file");
  expect_refused(std::string("\x93NUMPY\x02\x00\x10\x00", 10), "not a .npy file");  // v2 length cut short
  expect_refused("PK\x03\x04 this is a zip", "not a .npy file");
  std::string v4 = npy(dict("<f4", "(1,)"), bytes_of(4));
  v4[6] = 4;
  expect_refused(v4, "format version 4.0");
}

// --- the header dict ------------------------------------------------------------

TEST(NpyRead, test_malformed_shape_tuple_is_refused) {
  const char* bad[] = {"(3, x)", "(3,, 4)", "(3 4)", "(3, 4", "[3, 4]", "(3.5,)", "(,)", "(+3,)", "(-,)", "3"};
  for (const char* shape : bad) {
    SCOPED_TRACE(shape);
    expect_refused(npy(dict("<f4", shape), bytes_of(64)), "shape");
  }
}

TEST(NpyRead, test_unknown_or_unsupported_descr_is_refused) {
  expect_refused(npy(dict("<c8", "(1,)"), bytes_of(8)), "descr '<c8' is not one of");
  expect_refused(npy(dict(">f4", "(1,)"), bytes_of(4)), "descr '>f4' is not one of");
  expect_refused(npy(dict("<f4xyz", "(1,)"), bytes_of(4)), "descr '<f4xyz' is not one of");
  expect_refused(npy("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (1,), }", bytes_of(4)),
                 "'descr' is not a quoted string");
}

TEST(NpyRead, test_malformed_dict_is_refused) {
  expect_refused(npy("{'descr': '<f4', 'fortran_order': True, 'shape': (1,), }", bytes_of(4)), "Fortran order");
  expect_refused(npy("{'descr': '<f4', 'shape': (1,), }", bytes_of(4)), "no 'fortran_order'");
  expect_refused(npy("{'descr': '<f4', 'fortran_order': False, }", bytes_of(4)), "no 'shape'");
  expect_refused(npy("{'descr': '<f4', 'fortran_order': False, 'shape': (1,), 'x': 1, }", bytes_of(4)),
                 "unknown key 'x'");
  expect_refused(npy("{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", bytes_of(4)),
                 "'descr' twice");
  expect_refused(npy("'descr': '<f4', 'fortran_order': False, 'shape': (1,)", bytes_of(4)), "expected '{'");
  expect_refused(npy(dict("<f4", "(1,)") + " junk", bytes_of(4)), "after the header dict");
  expect_refused(npy("{'descr': '<f4' 'fortran_order': False, 'shape': (1,), }", bytes_of(4)),
                 "expected ',' or '}'");
}

TEST(NpyRead, test_header_cut_anywhere_is_refused_without_reading_past_it) {
  // The header ends where its length says, even mid-token: the parser must
  // stop there (under ASan, read_npy_buffer on an exact-size copy would show
  // a read past it).
  const std::string full = dict("<f4", "(2, 3)");
  for (size_t n = 0; n < full.size(); ++n) {
    SCOPED_TRACE(n);
    const std::string h = full.substr(0, n);
    std::string file = preamble(1, static_cast<uint32_t>(h.size())) + h;
    std::vector<uint8_t> exact(file.begin(), file.end());
    NpyArray a;
    EXPECT_EQ(read_npy_buffer(exact.data(), exact.size(), "cut.npy", &a), Error::InvalidArgument);
  }
}

// --- good files -----------------------------------------------------------------

TEST(NpyRead, test_files_as_numpy_writes_them_are_read) {
  // np.save of np.arange(6, dtype=np.float32).reshape(2, 3) and friends: the
  // exact bytes numpy 2 writes.
  const std::string d24 = bytes_of(24);
  expect_read(npy(dict("<f4", "(2, 3)"), d24), ScalarType::Float32, {2, 3}, d24);
  expect_read(npy(dict("<f4", "(2, 3)"), d24, 2), ScalarType::Float32, {2, 3}, d24);  // version 2.0
  expect_read(npy(dict("<f4", "(2, 3)"), d24, 3), ScalarType::Float32, {2, 3}, d24);  // version 3.0
  expect_read(npy(dict("<i8", "()"), bytes_of(8)), ScalarType::Int64, {}, bytes_of(8));
  expect_read(npy(dict("|b1", "(5,)"), bytes_of(5)), ScalarType::Bool, {5}, bytes_of(5));
  expect_read(npy(dict("<f4", "(0, 3)")), ScalarType::Float32, {0, 3}, "");
  expect_read(npy(dict("|u1", "(3, 0, 1000000)")), ScalarType::UInt8, {3, 0, 1000000}, "");
  expect_read(npy(dict("<f4", "(1, 1, 1, 1, 1, 1, 1, 2)"), bytes_of(8)), ScalarType::Float32,
              {1, 1, 1, 1, 1, 1, 1, 2}, bytes_of(8));
}

TEST(NpyRead, test_other_spellings_numpy_accepts_are_read) {
  const std::string d8 = bytes_of(8);
  // Keys in any order, double quotes, no trailing comma, no padding.
  std::string h = "{\"shape\": (2,), \"fortran_order\": False, \"descr\": \"<f4\"}";
  expect_read(preamble(1, static_cast<uint32_t>(h.size())) + h + d8, ScalarType::Float32, {2}, d8);
  // Python 2 numpy wrote long sizes with an L; no space after commas.
  expect_read(npy("{'descr': '<i4', 'fortran_order': False, 'shape': (2L,1L), }", d8), ScalarType::Int32, {2, 1},
              d8);
  // A single size without the tuple's comma; bytes past the data are ignored.
  expect_read(npy(dict("<f2", "(4)"), d8 + "tail"), ScalarType::Float16, {4}, d8);
}

TEST(NpyWrite, test_round_trip_through_write_npy) {
  struct Case {
    ScalarType dtype;
    std::vector<int64_t> sizes;
  };
  const Case cases[] = {{ScalarType::Float32, {2, 3}}, {ScalarType::Int64, {5}},   {ScalarType::Bool, {}},
                        {ScalarType::Float32, {0, 4}}, {ScalarType::Int8, {3, 1, 2}}, {ScalarType::Float64, {1}}};
  for (const Case& c : cases) {
    SCOPED_TRACE(scalar_type_name(c.dtype));
    Tensor t;
    t.dtype = c.dtype;
    t.dim = static_cast<int32_t>(c.sizes.size());
    for (size_t d = 0; d < c.sizes.size(); ++d) {
      t.sizes[d] = c.sizes[d];
      t.numel *= c.sizes[d];
    }
    const std::string data = bytes_of(t.nbytes());
    t.data = const_cast<char*>(data.data());
    const std::string path = temp_path("tern_npy_round_trip");
    ASSERT_EQ(write_npy(path.c_str(), t), Error::Ok);
    const std::string bytes = file_bytes(path);
    unlink(path.c_str());
    EXPECT_EQ((bytes.size() - t.nbytes()) % 64, 0u) << "the data starts 64-byte aligned";
    expect_read(bytes, c.dtype, c.sizes, data);
  }
}

// Every .npy file in the repository was written by numpy: the frozen files'
// inputs and outputs, and fuzz_npy's seeds (tests/fuzz/make_seeds_npy.py).
TEST(NpyRead, test_every_npy_file_numpy_wrote_here_is_read_to_its_last_byte) {
  const std::string data_dir = TERN_TEST_DATA_DIR;
  std::vector<std::string> dirs = {data_dir + "/../fuzz/seeds_npy"};
  for (const char* v : {"v1", "v1_1", "v1_2", "v1_3"}) dirs.push_back(data_dir + "/" + v);
  int count = 0;
  for (const std::string& dir : dirs) {
    DIR* d = opendir(dir.c_str());
    ASSERT_NE(d, nullptr) << dir;
    while (dirent* e = readdir(d)) {
      const std::string name = e->d_name;
      if (name.size() < 4 || name.compare(name.size() - 4, 4, ".npy") != 0) continue;
      const std::string path = dir + "/" + name;
      SCOPED_TRACE(path);
      NpyArray a;
      ASSERT_EQ(read_npy(path.c_str(), &a), Error::Ok) << last_error_message();
      EXPECT_EQ(a.tensor().nbytes(), a.data.size());
      const std::string bytes = file_bytes(path);
      ASSERT_GE(bytes.size(), a.data.size());
      EXPECT_EQ(bytes.substr(bytes.size() - a.data.size()), std::string(a.data.begin(), a.data.end()))
          << "the data is the file's last bytes";
      ++count;
    }
    closedir(d);
  }
  EXPECT_GE(count, 11);
}

TEST(NpyRead, test_missing_file_or_a_folder_is_refused_with_access_failed) {
  NpyArray a;
  EXPECT_EQ(read_npy("/nonexistent/x.npy", &a), Error::AccessFailed);
  const char* dir = getenv("TMPDIR");
  EXPECT_EQ(read_npy(dir && dir[0] ? dir : "/tmp", &a), Error::AccessFailed);
  EXPECT_NE(std::string(last_error_message()).find("not a regular file"), std::string::npos)
      << last_error_message();
}

}  // namespace
}  // namespace tern
