// libaccel C++ API umbrella header.
#pragma once

#include "accel/accelerator.hpp"
#include "accel/data.hpp"
#include "accel/error.hpp"
#include "accel/loss.hpp"
#include "accel/memory.hpp"
#include "accel/memory_estimate.hpp"
#include "accel/options.hpp"
#include "accel/partial_state.hpp"
#include "accel/model.hpp"
#include "accel/optimizer.hpp"
#include "accel/scheduler.hpp"
#include "accel/sequence_data.hpp"
