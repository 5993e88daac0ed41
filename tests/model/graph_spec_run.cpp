// Test helper for test_graph_pytorch_twin.py: builds a model from a JSON spec,
// runs the named forward on the tensors of a safetensors file, and writes the
// model's parameters and the outputs as safetensors, so a PyTorch twin can load
// the same weights by name and compare.
//   graph_spec_run SPEC.json INPUTS.safetensors WEIGHTS_OUT OUTPUTS_OUT [f64]
// f64: the parameters and floating-point buffers widened to float64 (exactly,
// from their float32 initial values) before anything is written or run.
#include <ATen/ATen.h>

#include <fstream>
#include <iostream>
#include <sstream>
#include <string>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"
#include "accel/model.hpp"

int main(int argc, char** argv) {
  const bool f64 = argc == 6 && std::string(argv[5]) == "f64";
  if (argc != 5 && !f64) {
    std::cerr << "usage: graph_spec_run SPEC.json INPUTS.safetensors WEIGHTS_OUT OUTPUTS_OUT [f64]\n";
    return 2;
  }
  try {
    std::ifstream file(argv[1]);
    std::stringstream spec;
    spec << file.rdbuf();
    accel::Model model = accel::Model::from_json(spec.str());
    if (f64) {
      at::NoGradGuard no_grad;
      for (auto& p : model.parameters()) p.set_data(p.to(at::kDouble));
      for (auto& [name, b] : model.named_buffers()) {
        if (b.is_floating_point()) b.set_data(b.to(at::kDouble));
      }
    }
    accel::TensorDict weights = model.named_parameters();
    for (auto& item : model.named_buffers()) weights.push_back(item);
    accel::save_safetensors(argv[3], weights);
    accel::Model::NamedTensors outputs = model.forward(accel::load_safetensors(argv[2]));
    for (auto& [name, tensor] : outputs) tensor = tensor.detach().contiguous();
    accel::save_safetensors(argv[4], outputs);
  } catch (const std::exception& e) {
    std::cerr << "graph_spec_run: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
