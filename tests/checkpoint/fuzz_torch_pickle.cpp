// libFuzzer target for the data-only pickle reader (torch_pickle.cpp): any
// data.pkl must either read into a value or be refused with an accel::Error
// that says why — never crash, hang, or call anything. The input's first byte
// picks the vocabulary (odd: random states, with NumPy's inert globals); the
// rest is data.pkl, placed in a torch.save zip archive beside two storages
// ("0": 8 floats, "1": 3 bytes) that its persistent ids may name. LibTorch
// and ASan do not mix (tests/fuzz/CMakeLists.txt), so this links the system
// LibTorch and carries the fuzzer's coverage and UBSan only.
#include <caffe2/serialize/inline_container.h>

#include <cstdint>
#include <cstring>
#include <string>

#include "accel/error.hpp"
#include "formats/torch_pickle.hpp"

namespace {

std::string archive(const uint8_t* data, size_t size) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&out](const void* p, size_t n) {
    out.append(static_cast<const char*>(p), n);
    return n;
  });
  writer.writeRecord("data.pkl", data, size);
  const float floats[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  writer.writeRecord("data/0", floats, sizeof floats);
  writer.writeRecord("data/1", "abc", 3);
  writer.writeRecord("byteorder", "little", 6);
  writer.writeEndOfFile();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const auto vocabulary =
      data[0] & 1 ? accel::detail::PickleVocabulary::RandomStates : accel::detail::PickleVocabulary::StateDict;
  try {
    const c10::IValue value = accel::detail::read_torch_save(archive(data + 1, size - 1), "fuzz", vocabulary);
    return value.isTensor() && value.toTensor().numel() == 12345 ? 0 : 0;
  } catch (const accel::Error& error) {
    if (std::strlen(error.what()) == 0) __builtin_trap();  // every refusal says why
    return 0;
  }
}
