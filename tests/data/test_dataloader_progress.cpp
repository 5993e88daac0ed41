// accel_dataloader_set_progress: a bar per epoch, redrawn with \r on a terminal (a
// pty here), plain lines on a pipe, nothing on ranks other than 0 or when off.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <pty.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <functional>
#include <string>

#include "accel/accel.h"

namespace {

// Runs body with stderr (fd 2) redirected to write_fd, then returns what read_fd holds.
std::string capture_stderr(int write_fd, int read_fd, const std::function<void()>& body) {
  std::fflush(stderr);
  const int saved = dup(2);
  dup2(write_fd, 2);
  body();
  std::fflush(stderr);
  dup2(saved, 2);
  close(saved);
  close(write_fd);
  fcntl(read_fd, F_SETFL, fcntl(read_fd, F_GETFL) | O_NONBLOCK);
  std::string out;
  char buffer[4096];
  for (ssize_t n; (n = read(read_fd, buffer, sizeof buffer)) > 0;) out.append(buffer, static_cast<size_t>(n));
  close(read_fd);
  return out;
}

std::string capture_pipe(const std::function<void()>& body) {
  int fds[2];
  EXPECT_EQ(pipe(fds), 0);
  return capture_stderr(fds[1], fds[0], body);
}

size_t count(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

class LoaderProgress : public ::testing::Test {
 protected:
  void SetUp() override {
    unsetenv("ACCEL_DISABLE_PROGRESS_BAR");
    unsetenv("RANK");
    float x[20] = {};
    int64_t y[20] = {}, xs[] = {20, 1}, ys[] = {20};
    accel_tensor *inputs = nullptr, *targets = nullptr;
    ASSERT_EQ(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, xs, 2, &inputs), ACCEL_OK);
    ASSERT_EQ(accel_tensor_from_buffer(y, sizeof y, ACCEL_INT64, ys, 1, &targets), ACCEL_OK);
    ASSERT_EQ(accel_dataset_from_tensors(inputs, targets, &dataset_), ACCEL_OK);
    accel_tensor_free(inputs);
    accel_tensor_free(targets);
    accel_dataloader_options options;
    accel_dataloader_options_init(&options);
    options.batch_size = 2;  // 10 batches an epoch
    ASSERT_EQ(accel_dataloader_create(dataset_, &options, &loader_), ACCEL_OK);
  }
  void TearDown() override {
    accel_dataloader_free(loader_);
    accel_dataset_free(dataset_);
    unsetenv("RANK");
  }
  void epoch() {
    int64_t batches = 0;
    for (;;) {
      accel_tensor *x = nullptr, *y = nullptr;
      ASSERT_EQ(accel_dataloader_next(loader_, &x, &y), ACCEL_OK) << accel_last_error();
      if (!x) break;
      accel_tensor_free(x);
      accel_tensor_free(y);
      ++batches;
    }
    EXPECT_EQ(batches, 10);
  }
  accel_dataset* dataset_ = nullptr;
  accel_dataloader* loader_ = nullptr;
};

TEST_F(LoaderProgress, PipePrintsALineEveryTenthAndAgainNextEpoch) {
  ASSERT_EQ(accel_dataloader_set_progress(loader_, "train"), ACCEL_OK);
  std::string out = capture_pipe([&] { epoch(); });
  EXPECT_EQ(count(out, "\r"), 0u) << out;
  EXPECT_EQ(count(out, "\n"), 10u) << out;
  EXPECT_NE(out.find("train:  10% 1/10"), std::string::npos) << out;
  EXPECT_NE(out.find("train: 100% 10/10"), std::string::npos) << out;
  // "": labelled by the epoch, a new bar for the next one.
  ASSERT_EQ(accel_dataloader_set_progress(loader_, ""), ACCEL_OK);
  out = capture_pipe([&] { epoch(); });
  EXPECT_NE(out.find("epoch 1: 100% 10/10"), std::string::npos) << out;
}

TEST_F(LoaderProgress, TerminalRedrawsInPlace) {
  ASSERT_EQ(accel_dataloader_set_progress(loader_, "train"), ACCEL_OK);
  int master = -1, slave = -1;
  ASSERT_EQ(openpty(&master, &slave, nullptr, nullptr, nullptr), 0);
  std::string out = capture_stderr(slave, master, [&] { epoch(); });
  // Drawn at the epoch's first batch, then after each of the 10: every draw starts with \r.
  EXPECT_GE(count(out, "\rtrain |"), 10u) << out;
  EXPECT_NE(out.find("\rtrain |##############################| 100% 10/10"), std::string::npos) << out;
  EXPECT_EQ(out.back(), '\n') << "the line ends when the epoch does";
}

TEST_F(LoaderProgress, OnlyRankZeroAndOnlyWhenAsked) {
  EXPECT_EQ(capture_pipe([&] { epoch(); }), "");  // off by default
  ASSERT_EQ(accel_dataloader_set_progress(loader_, "train"), ACCEL_OK);
  setenv("RANK", "1", 1);
  EXPECT_EQ(capture_pipe([&] { epoch(); }), "");
  unsetenv("RANK");
  ASSERT_EQ(accel_dataloader_set_progress(loader_, nullptr), ACCEL_OK);
  EXPECT_EQ(capture_pipe([&] { epoch(); }), "");
  EXPECT_EQ(accel_dataloader_set_progress(nullptr, "train"), ACCEL_ERR_INVALID_ARGUMENT);
}

}  // namespace
