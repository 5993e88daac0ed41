// Precompiled header for the core: the LibTorch headers nearly every core file needs.
// Narrow headers only; torch/torch.h would pull in all of the C++ frontend.
#pragma once
#include <ATen/ATen.h>
#include <torch/nn/module.h>
#include <torch/nn/modules/container/sequential.h>
#include <torch/optim/optimizer.h>

#include <memory>
#include <string>
#include <vector>
