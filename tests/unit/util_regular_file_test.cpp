// SPDX-License-Identifier: Apache-2.0
// open_regular_file: a FIFO, a directory or a device is refused without being opened (a FIFO
// would block open(2) until a writer came), a regular file is opened.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <chrono>
#include <fstream>
#include <string>

#include <gtest/gtest.h>

#include "core_test_support.hpp"
#include "util/regular_file.hpp"

namespace {

using core_test::TempDir;

TEST(RegularFile, OpensARegularFile) {
  TempDir dir;
  { std::ofstream(dir.file("plain")) << "abc"; }
  auto fd = ehbt::util::open_regular_file(dir.file("plain"));
  ASSERT_TRUE(fd.has_value()) << fd.error().message();
  char buf[4] = {};
  EXPECT_EQ(read(*fd, buf, sizeof buf), 3);
  EXPECT_EQ(std::string(buf), "abc");
  close(*fd);
  EXPECT_TRUE(ehbt::util::is_regular_file(dir.file("plain")));
}

TEST(RegularFile, RefusesAFifoWithoutBlocking) {
  TempDir dir;
  const std::string fifo = dir.file("fifo");
  ASSERT_EQ(mkfifo(fifo.c_str(), 0600), 0);
  // No writer: a plain open(O_RDONLY) would block here forever.
  const auto start = std::chrono::steady_clock::now();
  auto fd = ehbt::util::open_regular_file(fifo);
  EXPECT_LT(std::chrono::steady_clock::now() - start, std::chrono::seconds(5));
  ASSERT_FALSE(fd.has_value());
  EXPECT_EQ(fd.error().error, 0);
  EXPECT_EQ(fd.error().message(), "not a regular file");
  EXPECT_FALSE(ehbt::util::is_regular_file(fifo));
  // Through a symbolic link too.
  const std::string link = dir.file("link");
  ASSERT_EQ(symlink(fifo.c_str(), link.c_str()), 0);
  auto via_link = ehbt::util::open_regular_file(link);
  ASSERT_FALSE(via_link.has_value());
  EXPECT_EQ(via_link.error().message(), "not a regular file");
}

TEST(RegularFile, RefusesDirectoriesAndDevices) {
  TempDir dir;
  auto d = ehbt::util::open_regular_file(dir.path());
  ASSERT_FALSE(d.has_value());
  EXPECT_EQ(d.error().message(), "not a regular file");
  auto dev = ehbt::util::open_regular_file("/dev/null");
  ASSERT_FALSE(dev.has_value());
  EXPECT_EQ(dev.error().message(), "not a regular file");
}

TEST(RegularFile, MissingFileGivesItsErrno) {
  TempDir dir;
  auto fd = ehbt::util::open_regular_file(dir.file("absent"));
  ASSERT_FALSE(fd.has_value());
  EXPECT_EQ(fd.error().error, ENOENT);
  EXPECT_EQ(fd.error().message(), "No such file or directory");
}

}  // namespace
