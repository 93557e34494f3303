// SPDX-License-Identifier: Apache-2.0
// The lines fixture program (tests/lines_fixture, built in several forms into
// EHBT_LINES_FIXTURE_DIR) as the lines tests use it: its images, the pcs it captures when run,
// and the LINE: markers of its source.
#pragma once

#include <gtest/gtest.h>
#include <stdlib.h>

#include <cstdio>
#include <filesystem>
#include <fstream>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "ehbt/image.hpp"

namespace ehbt::lines_fixture {

inline const std::string kFixtures = EHBT_LINES_FIXTURE_DIR;
inline const std::string kSource = std::string(EHBT_SOURCE_DIR) + "/tests/lines_fixture/";

// LINE:<name> markers of a source file: name -> line number.
inline std::map<std::string, uint32_t> markers(const std::string& file) {
  std::map<std::string, uint32_t> out;
  std::ifstream in(kSource + file);
  std::string text;
  for (uint32_t n = 1; std::getline(in, text); ++n) {
    const std::size_t at = text.find("/* LINE:");
    if (at == std::string::npos) continue;
    const std::size_t end = text.find(" */", at);
    out[text.substr(at + 8, end - at - 8)] = n;
  }
  return out;
}

// The image of `path` (relative paths are the fixture directory's).
inline std::shared_ptr<const Image> open_image(const std::string& path) {
  const std::string full = path.starts_with("/") ? path : kFixtures + "/" + path;
  auto img = Image::open(full);
  EXPECT_TRUE(img.has_value()) << full;
  return img ? std::shared_ptr<const Image>(std::move(img.value())) : nullptr;
}

// The program's two captured return addresses, as link-time lookup pcs (it prints them with
// where its ELF header is loaded).
inline std::vector<uint64_t> lookup_pcs(const std::string& program) {
  auto image = open_image(program);
  FILE* p = popen((kFixtures + "/" + program).c_str(), "r");
  if (p == nullptr || !image) return {};
  unsigned long a = 0, b = 0, header = 0;
  int r = 0;
  const int got = fscanf(p, "%lx %lx %lx %d", &a, &b, &header, &r);
  pclose(p);
  if (got != 4) return {};
  const uint64_t bias = header - image->min_vaddr();
  return {a - bias - 1, b - bias - 1};
}

// `program` (a fresh image: answers are kept per image), with `debug` attached when named
// (paths as open_image's).
inline Module module_of(const std::string& program, const std::string& debug = "") {
  Module m;
  auto image = open_image(program);
  if (image && !debug.empty()) {
    EXPECT_TRUE(image->attach_debug_file(open_image(debug)));
  }
  m.image = image;
  m.path = program;
  return m;
}

// A test with a cache directory of its own ($EHBT_CACHE_DIR, removed afterwards); list()
// gives the files of one of its subdirectories: name -> size.
class CacheDirTest : public testing::Test {
 protected:
  void SetUp() override {
    char tmpl[] = "/tmp/ehbt-cache-test.XXXXXX";
    ASSERT_NE(::mkdtemp(tmpl), nullptr);
    root_ = tmpl;
    ::setenv("EHBT_CACHE_DIR", root_.c_str(), 1);
  }
  void TearDown() override {
    ::unsetenv("EHBT_CACHE_DIR");
    std::error_code ec;
    std::filesystem::remove_all(root_, ec);
  }

  std::map<std::string, uintmax_t> list(const std::filesystem::path& dir) const {
    std::map<std::string, uintmax_t> out;
    std::error_code ec;
    for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
      const std::string name = e.path().filename().string();
      // The directory's usage ledger (lines/cache_dir.hpp) is no cache file.
      if (name.ends_with(".usage")) continue;
      out[name] = e.file_size();
    }
    return out;
  }

  std::string root_;
};

}  // namespace ehbt::lines_fixture
