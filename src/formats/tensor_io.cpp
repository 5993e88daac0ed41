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

void write_tensors(ByteSink& sink, const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                   const std::map<std::string, std::string>& metadata) {
  std::vector<safetensors::TensorView> views;
  for (const auto& [name, tensor] : tensors) {
    require_arg(tensor.defined(), "safetensors: tensor \"" + name + "\" is undefined");
    safetensors::TensorView view{name,
                                 safetensors_dtype(tensor.scalar_type()),
                                 tensor.sizes().vec(),
                                 nullptr,
                                 static_cast<size_t>(tensor.numel()) * tensor.element_size(),
                                 {}};
    if (tensor.device().is_cpu() && tensor.is_contiguous()) {
      view.data = tensor.data_ptr();  // straight from the tensor's memory
    } else {
      // Copied to the host (or made contiguous) one tensor at a time, while written.
      at::Tensor source = tensor.detach();
      view.stream = [source](ByteSink& out) {
        const at::Tensor host = source.to(at::kCPU).contiguous();
        out.write(host.data_ptr(), static_cast<size_t>(host.numel()) * host.element_size());
      };
    }
    views.push_back(std::move(view));
  }
  safetensors::write(sink, std::move(views), metadata);
}

std::string serialize_tensors(const std::vector<std::pair<std::string, at::Tensor>>& tensors,
                              const std::map<std::string, std::string>& metadata) {
  StringSink sink;
  write_tensors(sink, tensors, metadata);
  return std::move(sink.bytes);
}

}  // namespace accel::detail

namespace accel {

void save_safetensors(const std::string& path, const TensorDict& tensors,
                      const std::map<std::string, std::string>& metadata) {
  detail::AtomicFileWriter file(path);
  detail::write_tensors(file, tensors, metadata);
  file.commit();
}

TensorDict load_safetensors(const std::string& path, std::map<std::string, std::string>* metadata) {
  safetensors::File file = safetensors::File::open(path);
  TensorDict out;
  for (const auto& entry : file.entries()) out.emplace_back(entry.name, detail::read_tensor(file, entry));
  if (metadata) *metadata = file.metadata();
  return out;
}

}  // namespace accel
