// Doubles as text for records other tools read back (tracker params and
// metrics): the shortest text that parses back to the same double, laid out
// as Python's str(float) does, because Accelerate logs str(v) and MLflow
// refuses a resumed run's param whose text changed ("0.1" vs
// "0.10000000000000001").
#pragma once

#include <string>

namespace accel::detail {

// 0.1 -> "0.1", 3e-4 -> "0.0003", 1e-5 -> "1e-05", 1/3 -> "0.3333333333333333",
// 1e16 -> "1e+16", nan -> "nan", -inf -> "-inf", as Python's str(float).
// One difference: a whole number prints without ".0" (3.0 -> "3"), since a
// number from C or JSON does not say whether it was an int, and the common
// whole-number config values (epochs, batch sizes) are ints in Python, which
// str() prints as "3".
std::string shortest_number_text(double value);

}  // namespace accel::detail
