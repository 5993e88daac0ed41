// The Python and numpy generator states random_states_{rank}.pkl carries:
// MT19937 words equal to CPython's random.seed(s) and numpy's
// np.random.seed(s), values taken from Python 3.11 and numpy 1.24.
#include <gtest/gtest.h>

#include "checkpoint/random_states.hpp"

namespace {

struct Words {
  uint64_t seed;
  uint32_t first, second, last;
};

}  // namespace

TEST(RandomStates, PythonStateMatchesCPythonsSeed) {
  // Seeds of one 32-bit word, of two (set_seed's are below 2^32; LibTorch's
  // default seed is not), and the largest.
  for (const Words& w : {Words{0, 2147483648u, 766982754u, 2902720905u}, Words{3, 2147483648u, 507801126u, 2718891946u},
                         Words{8589934597ull, 2147483648u, 3324538363u, 987144959u},
                         Words{18446744073709551615ull, 2147483648u, 2932382577u, 861141058u}}) {
    auto mt = accel::detail::python_mt_state(w.seed);
    EXPECT_EQ(mt[0], w.first) << w.seed;
    EXPECT_EQ(mt[1], w.second) << w.seed;
    EXPECT_EQ(mt[623], w.last) << w.seed;
  }
}

TEST(RandomStates, NumpyStateMatchesNumpysSeed) {
  auto mt = accel::detail::numpy_mt_state(4294967295u);
  EXPECT_EQ(mt[0], 4294967295u);
  EXPECT_EQ(mt[1], 1340201581u);
  EXPECT_EQ(mt[623], 3413567280u);
}
