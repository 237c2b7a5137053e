// A main() for the fuzz harnesses in ordinary builds (gcc, no libFuzzer):
// runs LLVMFuzzerTestOneInput once on each file named, or on each file of
// each folder named, like libFuzzer given files. ctest runs every harness
// this way over the seed corpus and tests/data/malformed (where the
// reproducers of crashes the fuzzers found live), so each fixed crash stays
// fixed in `make test` and under ASan in `make test-sanitize`.
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <string>
#include <vector>

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size);

namespace {

bool read_file(const std::string& path, std::vector<uint8_t>* out) {
  FILE* f = fopen(path.c_str(), "rb");
  if (f == nullptr) return false;
  out->clear();
  uint8_t buf[1 << 16];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), f)) > 0) out->insert(out->end(), buf, buf + n);
  fclose(f);
  return true;
}

void collect(const std::string& path, std::vector<std::string>* files) {
  struct stat st;
  if (stat(path.c_str(), &st) != 0) {
    fprintf(stderr, "replay: no such file or folder: %s\n", path.c_str());
    exit(2);
  }
  if (!S_ISDIR(st.st_mode)) {
    files->push_back(path);
    return;
  }
  DIR* d = opendir(path.c_str());
  if (d == nullptr) return;
  std::vector<std::string> names;
  while (dirent* e = readdir(d)) {
    std::string name = e->d_name;
    if (name[0] != '.') names.push_back(name);
  }
  closedir(d);
  std::sort(names.begin(), names.end());
  for (const std::string& n : names) {
    const std::string p = path + "/" + n;
    if (stat(p.c_str(), &st) == 0 && S_ISREG(st.st_mode)) files->push_back(p);
  }
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  for (int i = 1; i < argc; ++i) collect(argv[i], &files);
  if (files.empty()) {
    fprintf(stderr, "usage: %s FILE_OR_FOLDER...: no input files\n", argv[0]);
    return 2;
  }
  std::vector<uint8_t> data;
  for (const std::string& f : files) {
    if (!read_file(f, &data)) {
      fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    LLVMFuzzerTestOneInput(data.data(), data.size());
  }
  printf("replay: %zu inputs ran without a crash\n", files.size());
  return 0;
}
