#include <gtest/gtest.h>

#include <string>

#include "cli/line_prefixer.hpp"

namespace {

using accel::cli::LinePrefixer;

TEST(LinePrefixer, PrefixesEveryCompleteLine) {
  LinePrefixer lines("[rank 2] ");
  EXPECT_EQ(lines.feed("a\nb\n"), "[rank 2] a\n[rank 2] b\n");
  EXPECT_EQ(lines.feed("\n"), "[rank 2] \n");  // an empty line stays a line
  EXPECT_EQ(lines.finish(), "");
}

TEST(LinePrefixer, HoldsALineUntilItEnds) {
  LinePrefixer lines("[rank 0] ");
  EXPECT_EQ(lines.feed("first ha"), "");
  EXPECT_EQ(lines.feed("lf, second"), "");
  EXPECT_EQ(lines.feed(" half\nnext"), "[rank 0] first half, second half\n");
  EXPECT_EQ(lines.feed("\n"), "[rank 0] next\n");
}

TEST(LinePrefixer, EndsAnUnterminatedLastLineAtEndOfStream) {
  LinePrefixer lines("[rank 1] ");
  EXPECT_EQ(lines.feed("done\nno newline"), "[rank 1] done\n");
  EXPECT_EQ(lines.finish(), "[rank 1] no newline\n");
  EXPECT_EQ(lines.finish(), "");
}

TEST(LinePrefixer, PassesOverlongLinesOnInPieces) {
  LinePrefixer lines("> ");
  std::string piece(LinePrefixer::kMaxLine, 'x');
  EXPECT_EQ(lines.feed(piece), "");  // exactly the limit is still one line
  EXPECT_EQ(lines.feed("\n"), "> " + piece + "\n");

  std::string out = lines.feed(piece + "yz");
  EXPECT_EQ(out, "> " + piece + "\n");
  EXPECT_EQ(lines.feed("\n"), "> yz\n");

  out = lines.feed(std::string(2 * LinePrefixer::kMaxLine + 1, 'w') + "\n");
  EXPECT_EQ(out, "> " + std::string(LinePrefixer::kMaxLine, 'w') + "\n> " + std::string(LinePrefixer::kMaxLine, 'w') +
                     "\n> w\n");
}

}  // namespace
