#include <torch/cuda.h>

#include "capi/handles.hpp"
#include "state/c10d_adapter.hpp"

#define ACCEL_STRINGIFY_(x) #x
#define ACCEL_STRINGIFY(x) ACCEL_STRINGIFY_(x)

extern "C" {

ACCEL_API const char* accel_version(void) {
  return ACCEL_STRINGIFY(ACCEL_VERSION_MAJOR) "." ACCEL_STRINGIFY(ACCEL_VERSION_MINOR) "." ACCEL_STRINGIFY(
      ACCEL_VERSION_PATCH);
}

ACCEL_API int accel_version_number(void) { return ACCEL_VERSION_NUMBER; }

ACCEL_API int accel_abi_version(void) { return ACCEL_ABI_VERSION; }

ACCEL_API int accel_has_feature(accel_feature feature) {
  switch (accel::capi::enum_value(feature)) {
    case ACCEL_FEATURE_GLOO: return 1;
    case ACCEL_FEATURE_CUDA: return torch::cuda::is_available() ? 1 : 0;
    case ACCEL_FEATURE_NCCL: return accel::detail::c10d_adapter::nccl_available() ? 1 : 0;
  }
  return 0;
}

}  // extern "C"
