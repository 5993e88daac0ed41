#include <ATen/ATen.h>
#include <gtest/gtest.h>

#include "accel/accelerator.hpp"

namespace {

// Accelerate's set_seed(seed, device_specific, deterministic) on one process.
class SetSeed : public ::testing::Test {
 protected:
  void TearDown() override { at::globalContext().setDeterministicAlgorithms(false, false); }
};

TEST_F(SetSeed, SameSeedSameNumbersAndDeviceSpecificAddsTheProcessIndex) {
  accel::Accelerator accelerator;
  accelerator.set_seed(42);
  at::Tensor first = at::rand({4});
  accelerator.set_seed(42);
  EXPECT_TRUE(at::equal(first, at::rand({4})));
  accelerator.set_seed(43);
  EXPECT_FALSE(at::equal(first, at::rand({4})));
  ASSERT_EQ(accelerator.process_index(), 0);
  accelerator.set_seed(42, /*device_specific=*/true);
  EXPECT_TRUE(at::equal(first, at::rand({4})));
}

TEST_F(SetSeed, DeterministicTurnsOnDeterministicAlgorithmsAndFalseLeavesThem) {
  accel::Accelerator accelerator;
  at::globalContext().setDeterministicAlgorithms(false, false);
  accelerator.set_seed(1);
  EXPECT_FALSE(at::globalContext().deterministicAlgorithms());
  accelerator.set_seed(1, false, /*deterministic=*/true);
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());
  EXPECT_FALSE(at::globalContext().deterministicAlgorithmsWarnOnly());  // errors, as torch's default
  accelerator.set_seed(1, false, false);
  EXPECT_TRUE(at::globalContext().deterministicAlgorithms());  // Accelerate never turns it off
}

}  // namespace
