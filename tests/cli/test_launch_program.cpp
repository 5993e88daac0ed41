#include <CLI/CLI.hpp>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cstdlib>
#include <fstream>
#include <map>
#include <string>
#include <vector>

#include "cli/launch_program.hpp"

namespace {

using accel::cli::LaunchConfig;
using accel::cli::LaunchFlags;
using Args = std::vector<std::string>;

// A folder with an executable "python3", a venv's bin/python and a script.
class LaunchProgram : public ::testing::Test {
 protected:
  void SetUp() override {
    char pattern[] = "/tmp/accel_launch_program_XXXXXX";
    ASSERT_NE(::mkdtemp(pattern), nullptr);
    dir_ = pattern;
    ASSERT_EQ(::mkdir((dir_ + "/bin").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_ + "/venv").c_str(), 0755), 0);
    ASSERT_EQ(::mkdir((dir_ + "/venv/bin").c_str(), 0755), 0);
    write(dir_ + "/bin/python3", 0755);
    write(dir_ + "/venv/bin/python", 0755);
    write(dir_ + "/train.py", 0644);
    env_["PATH"] = dir_ + "/bin";
  }
  void TearDown() override { std::system(("rm -rf " + dir_).c_str()); }

  static void write(const std::string& path, mode_t mode) {
    std::ofstream(path) << "#!/bin/sh\n";
    ::chmod(path.c_str(), mode);
  }

  LaunchConfig resolve(const LaunchFlags& flags) {
    LaunchConfig config;
    auto env = [this](const std::string& name) -> std::optional<std::string> {
      auto it = env_.find(name);
      return it == env_.end() ? std::nullopt : std::optional<std::string>(it->second);
    };
    accel::cli::resolve_program(flags, env, config, command_dir_);
    return config;
  }

  std::string error_of(const LaunchFlags& flags) {
    try {
      resolve(flags);
    } catch (const CLI::ValidationError& e) {
      return e.what();
    }
    return "no error";
  }

  LaunchFlags flags_for(const std::string& program, Args args = {}) {
    LaunchFlags flags;
    flags.program = program;
    flags.program_args = std::move(args);
    return flags;
  }

  std::string dir_;
  std::string command_dir_;  // the accel command's folder: none by default
  std::map<std::string, std::string> env_;
};

TEST_F(LaunchProgram, APythonScriptRunsWithPython3FromPath) {
  auto config = resolve(flags_for(dir_ + "/train.py", {"--lr", "1"}));
  EXPECT_EQ(config.program, dir_ + "/bin/python3");
  EXPECT_EQ(config.program_args, (Args{dir_ + "/train.py", "--lr", "1"}));
}

TEST_F(LaunchProgram, TheActiveVirtualEnvironmentsPythonComesFirst) {
  env_["VIRTUAL_ENV"] = dir_ + "/venv";
  EXPECT_EQ(resolve(flags_for(dir_ + "/train.py")).program, dir_ + "/venv/bin/python");
  auto flags = flags_for(dir_ + "/train.py");
  flags.python = "python3";  // --python wins, looked up on PATH
  EXPECT_EQ(resolve(flags).program, dir_ + "/bin/python3");
  env_["VIRTUAL_ENV"] = dir_ + "/nowhere";
  EXPECT_NE(error_of(flags_for(dir_ + "/train.py")).find("VIRTUAL_ENV=" + dir_ + "/nowhere has no bin/python"),
            std::string::npos);
}

// As Accelerate runs sys.executable: the Python the accel command was installed
// with wins over an active venv and PATH (its accel package matches the command).
TEST_F(LaunchProgram, ThePythonInstalledWithTheCommandComesBeforeVenvAndPath) {
  ASSERT_EQ(::mkdir((dir_ + "/usr").c_str(), 0755), 0);
  ASSERT_EQ(::mkdir((dir_ + "/usr/bin").c_str(), 0755), 0);
  write(dir_ + "/usr/bin/python3", 0755);
  command_dir_ = dir_ + "/usr/bin";  // /usr/bin/accel of the Debian package, beside /usr/bin/python3
  env_["VIRTUAL_ENV"] = dir_ + "/venv";
  auto config = resolve(flags_for(dir_ + "/train.py"));
  EXPECT_EQ(config.program, dir_ + "/usr/bin/python3");
  EXPECT_EQ(config.origins.back().second, dir_ + "/usr/bin/python3  (beside the accel command)");

  env_["ACCEL_PYTHON"] = dir_ + "/venv/bin/python";  // the wheel's console script: its sys.executable
  EXPECT_EQ(resolve(flags_for(dir_ + "/train.py")).program, dir_ + "/venv/bin/python");

  auto flags = flags_for(dir_ + "/train.py");
  flags.python = "python3";  // --python still wins
  EXPECT_EQ(resolve(flags).program, dir_ + "/bin/python3");
  EXPECT_EQ(resolve(flags).origins.back().second, dir_ + "/bin/python3  (--python)");

  env_["ACCEL_PYTHON"] = dir_ + "/gone/python";
  EXPECT_NE(error_of(flags_for(dir_ + "/train.py")).find("ACCEL_PYTHON=" + dir_ + "/gone/python is not an executable"),
            std::string::npos);
  env_.erase("ACCEL_PYTHON");
  command_dir_ = dir_;  // no python3 beside the command: the venv's, as before
  EXPECT_EQ(resolve(flags_for(dir_ + "/train.py")).program, dir_ + "/venv/bin/python");
}

TEST_F(LaunchProgram, ModuleRunsAsPythonDashM) {
  auto flags = flags_for("pkg.train", {"x"});
  flags.module = true;
  auto config = resolve(flags);
  EXPECT_EQ(config.program, dir_ + "/bin/python3");
  EXPECT_EQ(config.program_args, (Args{"-m", "pkg.train", "x"}));
}

TEST_F(LaunchProgram, OtherProgramsAndNoPythonRunAsIs) {
  auto config = resolve(flags_for("./trainer", {"a"}));
  EXPECT_EQ(config.program, "./trainer");
  EXPECT_EQ(config.program_args, Args{"a"});
  auto flags = flags_for(dir_ + "/train.py", {"a"});
  flags.no_python = true;
  config = resolve(flags);
  EXPECT_EQ(config.program, dir_ + "/train.py");
  EXPECT_EQ(config.program_args, Args{"a"});
}

TEST_F(LaunchProgram, BadCombinationsAndMissingFilesAreNamed) {
  EXPECT_NE(error_of(flags_for("missing.py")).find("Python script missing.py is not a file"), std::string::npos);
  auto flags = flags_for("pkg");
  flags.module = true;
  flags.no_python = true;
  EXPECT_NE(error_of(flags).find("--no_python: cannot go with -m/--module"), std::string::npos);
  flags = flags_for(dir_ + "/train.py");
  flags.python = dir_ + "/no-such-python";
  EXPECT_NE(error_of(flags).find(dir_ + "/no-such-python is not an executable file"), std::string::npos);
  flags.no_python = true;
  EXPECT_NE(error_of(flags).find("cannot go with --python"), std::string::npos);
  env_["PATH"] = dir_;  // no python3 there
  EXPECT_NE(error_of(flags_for(dir_ + "/train.py")).find("no python3 on PATH to run"), std::string::npos);
}

}  // namespace
