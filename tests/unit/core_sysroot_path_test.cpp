// SPDX-License-Identifier: Apache-2.0
// Sysroot lookups resolve like a chroot: `..` stops at the root, and symbolic links (absolute
// or relative) are followed inside it. Built on real directory trees with real links.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

#include "core/sysroot_path.hpp"
#include "core_test_support.hpp"

namespace {

namespace fs = std::filesystem;
using ehbt::core::resolve_in_root;

void touch(const std::string& path) {
  fs::create_directories(fs::path(path).parent_path());
  std::ofstream(path) << "x";
}

TEST(SysrootPath, PlainPathsJoinTheRoot) {
  core_test::TempDir root;
  touch(root.file("usr/lib/libc.so.6"));
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/libc.so.6"), root.file("usr/lib/libc.so.6"));
  EXPECT_EQ(resolve_in_root(root.path() + "/", "usr//lib/./libc.so.6"),
            root.file("usr/lib/libc.so.6"));
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/missing.so"), std::nullopt);
  EXPECT_EQ(resolve_in_root("", "/usr/lib/libc.so.6"), std::nullopt);
}

TEST(SysrootPath, DotDotNeverLeavesTheRoot) {
  core_test::TempDir outside;  // a sibling of the root, reachable by a lexical `..`
  core_test::TempDir root;
  touch(root.file("etc/passwd"));
  touch(root.file("usr/lib/libc.so.6"));
  touch(outside.file("libc.so.6"));
  const std::string outside_name = fs::path(outside.path()).filename();
  // Lexically this climbs out of the root; inside it, `..` at the top stays at the top. (Each
  // directory before a `..` must exist, as in any lookup.)
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/../../../../../../etc/passwd"),
            root.file("etc/passwd"));
  EXPECT_EQ(resolve_in_root(root.path(), "../../" + outside_name + "/libc.so.6"), std::nullopt);
  EXPECT_EQ(resolve_in_root(root.path(), "/../tmp/" + outside_name + "/libc.so.6"), std::nullopt);
}

TEST(SysrootPath, LinksAreFollowedInsideTheRoot) {
  core_test::TempDir root;
  touch(root.file("usr/lib/x86_64-linux-gnu/libc.so.6"));
  // Debian's merged /usr: a relative link; and an absolute one, as chroots often have.
  fs::create_directory_symlink("usr/lib", root.file("lib"));
  fs::create_directories(root.file("lib64"));
  fs::create_symlink("/usr/lib/x86_64-linux-gnu/libc.so.6", root.file("lib64/libc.so.6"));
  EXPECT_EQ(resolve_in_root(root.path(), "/lib/x86_64-linux-gnu/libc.so.6"),
            root.file("usr/lib/x86_64-linux-gnu/libc.so.6"));
  EXPECT_EQ(resolve_in_root(root.path(), "/lib64/libc.so.6"),
            root.file("usr/lib/x86_64-linux-gnu/libc.so.6"));
}

TEST(SysrootPath, LinksThatLeadOutAreResolvedInside) {
  core_test::TempDir outside;
  core_test::TempDir root;
  touch(outside.file("libc.so.6"));
  touch(root.file("etc/passwd"));
  fs::create_directories(root.file("usr/lib"));
  // An absolute link to a host directory, and a relative one that climbs past the root: both
  // would reach `outside` through the kernel's own lookup.
  fs::create_directory_symlink(outside.path(), root.file("usr/lib/abs"));
  fs::create_directory_symlink("../../../../../../../.." + outside.path(),
                               root.file("usr/lib/rel"));
  fs::create_symlink("../../../../../etc/passwd", root.file("usr/lib/pw"));
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/abs/libc.so.6"), std::nullopt);
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/rel/libc.so.6"), std::nullopt);
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/pw"), root.file("etc/passwd"));
  // The same tree holding a copy at the link's target path inside the root finds that copy.
  touch(root.path() + outside.path() + "/libc.so.6");
  EXPECT_EQ(resolve_in_root(root.path(), "/usr/lib/abs/libc.so.6"),
            root.path() + outside.path() + "/libc.so.6");
}

TEST(SysrootPath, LinkLoopsEnd) {
  core_test::TempDir root;
  fs::create_symlink("b", root.file("a"));
  fs::create_symlink("a", root.file("b"));
  fs::create_symlink("self/x", root.file("self"));
  EXPECT_EQ(resolve_in_root(root.path(), "/a"), std::nullopt);
  EXPECT_EQ(resolve_in_root(root.path(), "/self/lib.so"), std::nullopt);
  // A chain of exactly the allowed length still resolves; one more does not.
  touch(root.file("end"));
  std::string prev = "end";
  for (unsigned i = 0; i < ehbt::core::kMaxSymlinkHops; ++i) {
    const std::string name = "l" + std::to_string(i);
    fs::create_symlink(prev, root.file(name));
    prev = name;
  }
  EXPECT_EQ(resolve_in_root(root.path(), "/" + prev), root.file("end"));
  fs::create_symlink(prev, root.file("one_more"));
  EXPECT_EQ(resolve_in_root(root.path(), "/one_more"), std::nullopt);
}

}  // namespace
