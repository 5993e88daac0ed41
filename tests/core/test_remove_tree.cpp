#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>

#include <fstream>
#include <string>

#include "core/remove_tree.hpp"

namespace {

bool present(const std::string& path) {
  struct stat info;
  return ::lstat(path.c_str(), &info) == 0;
}

TEST(RemoveTree, RemovesNestedFilesButNeverFollowsLinks) {
  char templ[] = "/tmp/accel-rmtree-XXXXXX";
  std::string root = ::mkdtemp(templ);
  char outside_templ[] = "/tmp/accel-rmtree-outside-XXXXXX";
  std::string outside = ::mkdtemp(outside_templ);
  std::ofstream(outside + "/keep.txt") << "keep";
  ASSERT_EQ(::mkdir((root + "/a").c_str(), 0700), 0);
  ASSERT_EQ(::mkdir((root + "/a/b").c_str(), 0700), 0);
  std::ofstream(root + "/a/b/file.bin") << "bytes";
  ASSERT_EQ(::symlink(outside.c_str(), (root + "/a/link").c_str()), 0);

  EXPECT_FALSE(accel::detail::remove_tree(root));
  EXPECT_FALSE(present(root));
  EXPECT_TRUE(present(outside + "/keep.txt"));  // the link went, not what it pointed to
  EXPECT_FALSE(accel::detail::remove_tree(outside));
}

TEST(RemoveTree, MissingPathIsNotAnError) {
  EXPECT_FALSE(accel::detail::remove_tree("/tmp/accel-rmtree-never-created/x"));
}

TEST(RemoveTree, RemovesAPlainFile) {
  char templ[] = "/tmp/accel-rmtree-file-XXXXXX";
  int fd = ::mkstemp(templ);
  ASSERT_GE(fd, 0);
  ::close(fd);
  EXPECT_FALSE(accel::detail::remove_tree(templ));
  EXPECT_FALSE(present(templ));
}

}  // namespace
