// The oneDNN engine and stream every oneDNN kernel of libaccel runs on (the
// matrix products here, eltwise/'s GELU). Only for sources built with
// ACCEL_WITH_ONEDNN (cmake/dependencies.cmake decides; src/CMakeLists.txt
// lists them), since it needs oneDNN's headers.
#pragma once

#if !defined(ACCEL_WITH_ONEDNN)
#error "matmul/onednn_runtime.hpp is for sources built with oneDNN (ACCEL_WITH_ONEDNN)"
#endif

#include <oneapi/dnnl/dnnl.hpp>

namespace accel::detail::onednn {

// The process's CPU engine.
dnnl::engine& cpu_engine();

// This thread's in-order stream on cpu_engine() (a primitive runs on the
// calling thread's OpenMP team; stream.wait() returns when it is done).
dnnl::stream& cpu_stream();

}  // namespace accel::detail::onednn
