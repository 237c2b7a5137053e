// Writes the generated files of the malformed-file corpus (the recipes in
// malformed_files.h) into a folder, replacing the files of the same names:
//
//   build/tests/cpp/make_malformed tests/data/malformed
//
// malformed_test checks that the committed files are what this writes.
#include <cstdio>
#include <string>

#include "malformed_files.h"

int main(int argc, char** argv) {
  if (argc != 2) {
    fprintf(stderr, "usage: %s <folder>   (tests/data/malformed)\n", argv[0]);
    return 2;
  }
  for (const tern::test::malformed::Recipe& r : tern::test::malformed::recipes()) {
    const tern::test::AlignedBytes bytes = r.build();
    const std::string path = std::string(argv[1]) + "/" + r.file;
    FILE* f = fopen(path.c_str(), "wb");
    if (f == nullptr || fwrite(bytes.data(), 1, bytes.size(), f) != bytes.size() || fclose(f) != 0) {
      perror(path.c_str());
      return 1;
    }
  }
  printf("%zu files written to %s\n", tern::test::malformed::recipes().size(), argv[1]);
  return 0;
}
