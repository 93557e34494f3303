// SPDX-License-Identifier: Apache-2.0
// The rule that tells a module (a mapped ELF object) from a mapped data file, case by case as
// issue 32 item 7 states it, and the two facts it is fed: the file's first bytes and the
// mapping's execute permission.
#include <gtest/gtest.h>
#include <stdlib.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/mapped_object.hpp"
#include "core/proc_files.hpp"

namespace {

using ehbt::core::FileContent;
using ehbt::core::MappingEvidence;

MappingEvidence evidence(std::optional<bool> page, FileContent file, bool exec) {
  MappingEvidence e;
  e.first_page_elf = page;
  e.file = file;
  e.executable = exec;
  return e;
}

TEST(CoreMappedObject, Rule) {
  using ehbt::core::is_module_mapping;
  // A deleted file, first page not dumped: executable is code, read-only is data.
  EXPECT_TRUE(is_module_mapping(evidence(std::nullopt, FileContent::kUnavailable, true)));
  EXPECT_FALSE(is_module_mapping(evidence(std::nullopt, FileContent::kUnavailable, false)));
  // /dev/zero, not dumped: a device is never a module, executable or not.
  EXPECT_FALSE(is_module_mapping(evidence(std::nullopt, FileContent::kNotRegular, false)));
  EXPECT_FALSE(is_module_mapping(evidence(std::nullopt, FileContent::kNotRegular, true)));
  // Shared /dev/zero or SysV memory is dumped: its bytes are not ELF.
  EXPECT_FALSE(is_module_mapping(evidence(false, FileContent::kNotRegular, false)));
  EXPECT_FALSE(is_module_mapping(evidence(false, FileContent::kUnavailable, true)));
  // First page ELF (a deleted library, an ELF memfd): a module whatever the file says.
  EXPECT_TRUE(is_module_mapping(evidence(true, FileContent::kUnavailable, false)));
  EXPECT_TRUE(is_module_mapping(evidence(true, FileContent::kNotElf, false)));
  // Not dumped: the file decides (a locale file, a library).
  EXPECT_FALSE(is_module_mapping(evidence(std::nullopt, FileContent::kNotElf, true)));
  EXPECT_TRUE(is_module_mapping(evidence(std::nullopt, FileContent::kElf, false)));
}

TEST(CoreMappedObject, FileContent) {
  using ehbt::core::file_content;
  char dir[] = "/tmp/ehbt-mapped-object-XXXXXX";
  ASSERT_NE(mkdtemp(dir), nullptr);
  const std::string data = std::string(dir) + "/LC_CTYPE", elf = std::string(dir) + "/lib.so",
                    tiny = std::string(dir) + "/tiny", empty = std::string(dir) + "/empty";
  { std::ofstream(data) << "not an ELF file at all"; }
  {
    std::ofstream(elf) << "\x7f"
                          "ELF"
                       << std::string(60, '\0');
  }
  {
    std::ofstream(tiny) << "\x7f"
                           "E";
  }
  { std::ofstream touch(empty); }
  EXPECT_EQ(file_content(data), FileContent::kNotElf);
  EXPECT_EQ(file_content(elf), FileContent::kElf);
  EXPECT_EQ(file_content(tiny), FileContent::kNotElf);
  EXPECT_EQ(file_content(empty), FileContent::kNotElf);
  EXPECT_EQ(file_content("/dev/zero"), FileContent::kNotRegular);
  EXPECT_EQ(file_content(dir), FileContent::kNotRegular);
  EXPECT_EQ(file_content(std::string(dir) + "/deleted"), FileContent::kUnavailable);
  for (const std::string& f : {data, elf, tiny, empty}) unlink(f.c_str());
  rmdir(dir);
}

TEST(CoreMappedObject, ProcMapsExecutePermission) {
  const std::string maps =
      "7f0000000000-7f0000001000 r--p 00000000 08:01 42 /usr/lib/libc.so.6\n"
      "7f0000001000-7f0000002000 r-xp 00001000 08:01 42 /usr/lib/libc.so.6\n"
      "7f0000003000-7f0000004000 rw-s 00000000 00:01 7 /dev/zero (deleted)\n";
  auto m = ehbt::core::parse_proc_maps(maps, 100);
  ASSERT_EQ(m.size(), 3u);
  EXPECT_FALSE(m[0].executable);
  EXPECT_TRUE(m[1].executable);
  EXPECT_FALSE(m[2].executable);
  EXPECT_EQ(m[2].path, "/dev/zero (deleted)");
}

}  // namespace
