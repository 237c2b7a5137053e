// A main() for the fuzz harnesses in ordinary builds (gcc, no libFuzzer):
// runs LLVMFuzzerTestOneInput once on each file named, or on each file of
// each folder named, like libFuzzer given files. ctest runs every harness
// this way over the seed corpus, the fuzzers' reproducers
// (tests/fuzz/regressions) and tests/data/malformed, so each fixed crash
// stays fixed in `make test` and under ASan in `make test-sanitize`.
//
//   <harness>_replay [--harness NAME --manifest MANIFEST.txt] FILE_OR_FOLDER...
//
// With a manifest (tests/fuzz/regressions/MANIFEST.txt), each file it lists
// for harness NAME must end as its line says (outcome.h: "ran", "refused
// <step> <Error>" with a substring of the message, "skipped <why>"), every
// file of the manifest's folder named NAME-*.bin must have a line, and every
// line of NAME must have been replayed; else the replay fails (exit 1).
#include <dirent.h>
#include <sys/stat.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "tests/fuzz/outcome.h"

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

std::string trim(const std::string& s) {
  const size_t b = s.find_first_not_of(" \t"), e = s.find_last_not_of(" \t\r");
  return b == std::string::npos ? "" : s.substr(b, e - b + 1);
}

std::string base_name(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// One line of MANIFEST.txt: file | harness | outcome | message | what the fix established.
struct Expect {
  std::string outcome, message;
  int line = 0;
  bool seen = false;
};

// The lines of `path` for `harness`, by file name; exits 2 on a malformed manifest.
std::map<std::string, Expect> read_manifest(const std::string& path, const std::string& harness) {
  std::ifstream in(path);
  if (!in) {
    fprintf(stderr, "replay: cannot read %s\n", path.c_str());
    exit(2);
  }
  std::map<std::string, Expect> out;
  std::string line;
  for (int n = 1; std::getline(in, line); ++n) {
    if (trim(line).empty() || trim(line)[0] == '#') continue;
    std::vector<std::string> f;
    for (size_t start = 0;;) {
      const size_t bar = line.find(" | ", start);
      f.push_back(trim(line.substr(start, bar == std::string::npos ? std::string::npos : bar - start)));
      if (bar == std::string::npos) break;
      start = bar + 3;
    }
    if (f.size() != 5 || f[0].empty() || f[1].empty() || f[2].empty() || f[3].empty() || f[4].empty()) {
      fprintf(stderr, "replay: %s line %d: expected 5 fields separated by \" | \"\n", path.c_str(), n);
      exit(2);
    }
    if (f[1] == harness) out[f[0]] = Expect{f[2], f[3] == "-" ? "" : f[3], n};
  }
  return out;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> files;
  std::string harness, manifest;
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--harness") == 0 && i + 1 < argc) {
      harness = argv[++i];
    } else if (strcmp(argv[i], "--manifest") == 0 && i + 1 < argc) {
      manifest = argv[++i];
    } else {
      collect(argv[i], &files);
    }
  }
  if (files.empty() || harness.empty() != manifest.empty()) {
    fprintf(stderr, "usage: %s [--harness NAME --manifest MANIFEST.txt] FILE_OR_FOLDER...\n", argv[0]);
    return 2;
  }
  std::map<std::string, Expect> expect;
  std::string manifest_dir;
  if (!manifest.empty()) {
    expect = read_manifest(manifest, harness);
    manifest_dir = manifest.substr(0, manifest.rfind('/') + 1);
  }
  int wrong = 0;
  std::vector<uint8_t> data;
  for (const std::string& f : files) {
    if (!read_file(f, &data)) {
      fprintf(stderr, "replay: cannot read %s\n", f.c_str());
      return 2;
    }
    tern::fuzz::reset_outcome();
    LLVMFuzzerTestOneInput(data.data(), data.size());
    const std::string name = base_name(f);
    auto e = expect.find(name);
    if (e == expect.end()) {
      const bool in_manifest_dir = !manifest_dir.empty() && f.compare(0, manifest_dir.size(), manifest_dir) == 0 &&
                                   f.find('/', manifest_dir.size()) == std::string::npos;
      if (in_manifest_dir && name.compare(0, harness.size() + 1, harness + "-") == 0) {
        fprintf(stderr, "replay: %s: no line for %s in %s\n", f.c_str(), harness.c_str(), manifest.c_str());
        ++wrong;
      }
      continue;
    }
    e->second.seen = true;
    char got[160];
    tern::fuzz::describe_outcome(got, sizeof(got));
    const char* message = tern::fuzz::outcome().message;
    const bool message_ok = e->second.message.empty() || strstr(message, e->second.message.c_str()) != nullptr;
    if (e->second.outcome != got || !message_ok) {
      fprintf(stderr, "replay: %s: %s line %d says \"%s\" (message containing \"%s\"), got \"%s\" (message \"%s\")\n",
              f.c_str(), manifest.c_str(), e->second.line, e->second.outcome.c_str(), e->second.message.c_str(), got,
              message);
      ++wrong;
    }
  }
  for (const auto& [name, e] : expect) {
    if (!e.seen) {
      fprintf(stderr, "replay: %s line %d: %s was not replayed\n", manifest.c_str(), e.line, name.c_str());
      ++wrong;
    }
  }
  if (wrong) {
    fprintf(stderr, "replay: %d of the manifest's expectations failed\n", wrong);
    return 1;
  }
  printf("replay: %zu inputs ran without a crash; %zu ended as %s says\n", files.size(), expect.size(),
         manifest.empty() ? "no manifest" : manifest.c_str());
  return 0;
}
