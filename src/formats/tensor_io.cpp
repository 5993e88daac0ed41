#include "formats/tensor_io.hpp"

#include <ATen/ATen.h>

#include <cstring>

#include "accel/checkpoint.hpp"
#include "accel/error.hpp"
#include "core/file_io.hpp"

namespace accel::detail {

namespace {

const std::vector<std::pair<at::ScalarType, std::string>>& dtype_names() {
  static const std::vector<std::pair<at::ScalarType, std::string>> names{
      {at::kFloat, "F32"}, {at::kDouble, "F64"}, {at::kHalf, "F16"}, {at::kBFloat16, "BF16"}, {at::kLong, "I64"},
      {at::kInt, "I32"},   {at::kShort, "I16"},  {at::kChar, "I8"},  {at::kByte, "U8"},       {at::kBool, "BOOL"}};
  return names;
}

}  // namespace

std::string safetensors_dtype(at::ScalarType type) {
  for (const auto& [t, name] : dtype_names()) {
    if (t == type) return name;
  }
  fail(ErrorCode::Unsupported, std::string("safetensors: cannot store dtype ") + c10::toString(type));
}

at::ScalarType scalar_type_of(const safetensors::Entry& entry, const std::string& label) {
  for (const auto& [t, name] : dtype_names()) {
    if (name == entry.dtype) return t;
  }
  fail(ErrorCode::Unsupported,
       label + ": tensor \"" + entry.name + "\" has dtype " + entry.dtype + ", which LibTorch cannot hold");
}

at::Tensor read_tensor(const safetensors::File& file, const safetensors::Entry& entry) {
  at::Tensor t = at::empty(entry.shape, scalar_type_of(entry, file.label()));
  if (entry.end > entry.begin) std::memcpy(t.data_ptr(), file.data(entry), entry.end - entry.begin);
  return t;
}

at::Tensor mapped_tensor(const safetensors::File& file, const safetensors::Entry& entry) {
  at::ScalarType type = scalar_type_of(entry, file.label());
  const uint8_t* bytes = file.data(entry);
  if (entry.end == entry.begin || reinterpret_cast<uintptr_t>(bytes) % c10::elementSize(type) != 0) {
    return read_tensor(file, entry);
  }
  return at::from_blob(const_cast<uint8_t*>(bytes), entry.shape, at::TensorOptions().dtype(type));
}

std::string serialize_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  std::vector<at::Tensor> keep;
  std::vector<safetensors::TensorView> views;
  for (const auto& [name, tensor] : tensors) {
    require_arg(tensor.defined(), "safetensors: tensor \"" + name + "\" is undefined");
    at::Tensor host = tensor.detach().to(at::kCPU).contiguous();
    keep.push_back(host);
    views.push_back({name, safetensors_dtype(host.scalar_type()), host.sizes().vec(), host.data_ptr(),
                     static_cast<size_t>(host.numel()) * host.element_size()});
  }
  return safetensors::serialize(std::move(views), metadata);
}

}  // namespace accel::detail

namespace accel {

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  detail::write_file_atomically(path, detail::serialize_tensors(tensors, metadata));
}

TensorDict load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  safetensors::File file = safetensors::File::open(path);
  TensorDict out;
  for (const auto& entry : file.entries()) out.emplace_back(entry.name, detail::read_tensor(file, entry));
  if (metadata) *metadata = file.metadata();
  return out;
}

}  // namespace accel
