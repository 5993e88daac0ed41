#include <gtest/gtest.h>

#include <stdexcept>
#include <string>
#include <vector>

#include "cli/output_routing.hpp"

namespace {

using accel::cli::kBothStreams;
using accel::cli::kNoStream;
using accel::cli::kStderr;
using accel::cli::kStdout;
using accel::cli::OutputRouting;
using accel::cli::parse_local_ranks;
using accel::cli::StreamChoice;

TEST(StreamChoice, OneValueForEveryLocalRank) {
  auto both = StreamChoice::parse("3");
  EXPECT_EQ(both.streams_of(0), unsigned{kBothStreams});
  EXPECT_EQ(both.streams_of(7), unsigned{kBothStreams});
  EXPECT_TRUE(both.named_local_ranks().empty());
  EXPECT_EQ(StreamChoice::parse("0").streams_of(0), unsigned{kNoStream});
}

TEST(StreamChoice, PerLocalRankValuesLeaveTheOthersAtNone) {
  auto choice = StreamChoice::parse("0:1,2:2");
  EXPECT_EQ(choice.streams_of(0), unsigned{kStdout});
  EXPECT_EQ(choice.streams_of(1), unsigned{kNoStream});
  EXPECT_EQ(choice.streams_of(2), unsigned{kStderr});
  EXPECT_EQ(choice.named_local_ranks(), (std::vector<int>{0, 2}));
}

TEST(StreamChoice, BadValuesAreQuotedInTheError) {
  for (std::string bad : {"", "4", "-1", "both", "0:4", "0:", ":1", "0:1,", "0:1;1:2", "1:1,1:2", "99999999999:1"}) {
    try {
      StreamChoice::parse(bad);
      ADD_FAILURE() << "accepted \"" << bad << "\"";
    } catch (const std::invalid_argument& error) {
      EXPECT_NE(std::string(error.what()).find("\"" + bad + "\""), std::string::npos) << error.what();
    }
  }
}

TEST(LocalRanks, ListOfNonNegativeIntegers) {
  EXPECT_EQ(parse_local_ranks("0"), (std::vector<int>{0}));
  EXPECT_EQ(parse_local_ranks("0,2"), (std::vector<int>{0, 2}));
  EXPECT_THROW(parse_local_ranks(""), std::invalid_argument);
  EXPECT_THROW(parse_local_ranks("0,x"), std::invalid_argument);
  EXPECT_THROW(parse_local_ranks("-1"), std::invalid_argument);
}

struct Expected {
  bool to_file, to_terminal;
};

void expect_route(const OutputRouting& routing, int local_rank, accel::cli::StdStream stream, Expected expected) {
  auto route = routing.route(local_rank, stream);
  EXPECT_EQ(route.to_file, expected.to_file) << "local rank " << local_rank << " stream " << stream;
  EXPECT_EQ(route.to_terminal, expected.to_terminal) << "local rank " << local_rank << " stream " << stream;
}

TEST(OutputRouting, DefaultsAreTheTerminalWithoutLogDirAndTheFileWithIt) {
  OutputRouting terminal;
  expect_route(terminal, 0, kStdout, {false, true});
  expect_route(terminal, 1, kStderr, {false, true});
  EXPECT_FALSE(terminal.writes_files(2));

  OutputRouting files;
  files.log_dir = "logs";
  expect_route(files, 0, kStdout, {true, false});
  expect_route(files, 1, kStderr, {true, false});
  EXPECT_TRUE(files.writes_files(2));
}

// torchrun's rules: a redirected stream goes to the file only, a teed one to
// both; anything not named stays on the terminal, even with --log_dir.
TEST(OutputRouting, RedirectsAndTeeChooseEachStreamOfEachRank) {
  OutputRouting routing;
  routing.log_dir = "logs";
  routing.redirects = StreamChoice::parse("2");
  routing.tee = StreamChoice::parse("0:1");
  expect_route(routing, 0, kStdout, {true, true});
  expect_route(routing, 0, kStderr, {true, false});
  expect_route(routing, 1, kStdout, {false, true});
  expect_route(routing, 1, kStderr, {true, false});

  OutputRouting nothing_redirected;
  nothing_redirected.log_dir = "logs";
  nothing_redirected.redirects = StreamChoice::parse("0");
  expect_route(nothing_redirected, 0, kStdout, {false, true});
  EXPECT_FALSE(nothing_redirected.writes_files(4));

  OutputRouting tee_wins;
  tee_wins.redirects = StreamChoice::parse("3");
  tee_wins.tee = StreamChoice::parse("3");
  expect_route(tee_wins, 0, kStderr, {true, true});
  EXPECT_TRUE(tee_wins.writes_files(1));  // without --log_dir: the supervisor makes one
}

TEST(OutputRouting, LocalRanksFilterHidesOnlyTheTerminal) {
  OutputRouting routing;
  routing.tee = StreamChoice::parse("3");
  routing.local_ranks_filter = std::vector<int>{1};
  expect_route(routing, 0, kStdout, {true, false});
  expect_route(routing, 1, kStdout, {true, true});
}

}  // namespace
