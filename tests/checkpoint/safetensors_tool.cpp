// Helper for the interoperability test (test_safetensors_interop.py):
//   safetensors_tool write PATH   writes known tensors with libaccel's writer
//   safetensors_tool read PATH    prints {"name": [dtype, shape, sum], ...} read with libaccel's reader
#include <ATen/ATen.h>

#include <cstdio>
#include <cstring>
#include <nlohmann/json.hpp>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  try {
    if (std::strcmp(argv[1], "write") == 0) {
      accel::save_safetensors(argv[2],
                              {{"weight", at::arange(12, at::kFloat).view({3, 4}) / 7},
                               {"bias", at::arange(3, at::kDouble) - 1},
                               {"steps", at::tensor({int64_t{5}, int64_t{-9}})},
                               {"half", at::arange(4, at::kFloat).to(at::kHalf)},
                               {"mask", at::tensor({1, 0, 1}).to(at::kBool)}},
                              {{"format", "pt"}, {"written_by", "libaccel"}});
      return 0;
    }
    nlohmann::json out = nlohmann::json::object();
    std::map<std::string, std::string> metadata;
    for (auto& [name, t] : accel::load_safetensors(argv[2], &metadata)) {
      out[name] = {c10::toString(t.scalar_type()), t.sizes().vec(), t.to(at::kDouble).sum().item<double>()};
    }
    out["__metadata__"] = metadata;
    std::printf("%s\n", out.dump().c_str());
    return 0;
  } catch (const accel::Error& error) {
    std::fprintf(stderr, "%s\n", error.what());
    return 1;
  }
}
