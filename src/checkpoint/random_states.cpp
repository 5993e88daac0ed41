#include "checkpoint/random_states.hpp"

#include <ATen/CPUGeneratorImpl.h>
#include <ATen/Context.h>
#include <ATen/core/Dict.h>
#include <ATen/core/ivalue.h>
#include <torch/cuda.h>

#include <algorithm>
#include <mutex>

#include "accel/error.hpp"
#include "optim/optimizer_state.hpp"

namespace accel::detail {

std::vector<std::pair<std::string, at::Tensor>> generator_states() {
  std::vector<std::pair<std::string, at::Tensor>> states;
  {
    at::Generator gen = at::detail::getDefaultCPUGenerator();
    std::lock_guard<std::mutex> lock(gen.mutex());
    states.emplace_back("cpu", gen.get_state());
  }
  if (torch::cuda::is_available()) {
    for (int i = 0, n = static_cast<int>(torch::cuda::device_count()); i < n; ++i) {
      at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<int8_t>(i)));
      std::lock_guard<std::mutex> lock(gen.mutex());
      states.emplace_back("cuda_" + std::to_string(i), gen.get_state());
    }
  }
  return states;
}

namespace {

constexpr int kN = 624;
using Dict = c10::impl::GenericDict;

void init_genrand(std::array<uint32_t, kN>& mt, uint32_t seed) {
  mt[0] = seed;
  for (uint32_t i = 1; i < kN; ++i) mt[i] = 1812433253u * (mt[i - 1] ^ (mt[i - 1] >> 30)) + i;
}

c10::impl::GenericList words(const std::array<uint32_t, kN>& mt) {
  c10::impl::GenericList out(c10::IntType::get());
  for (uint32_t w : mt) out.push_back(static_cast<int64_t>(w));
  return out;
}

std::string describe(const c10::IValue& v) { return v.isInt() ? std::to_string(v.toInt()) : "a " + v.tagKind(); }

// A generator state, checked against the live generator's so that set_state
// cannot fail once applying begins.
at::Tensor checked_state(const c10::IValue& v, const at::Generator& live, const std::string& where) {
  require(v.isTensor(), ErrorCode::IO, where + " is " + describe(v) + ", not a tensor");
  const at::Tensor& t = v.toTensor();
  const at::Tensor current = live.get_state();
  require(t.scalar_type() == at::kByte, ErrorCode::IO,
          where + " has dtype " + std::string(c10::toString(t.scalar_type())) + ", expected uint8");
  require(t.sizes() == current.sizes(), ErrorCode::IO,
          where + " has shape " + c10::str(t.sizes()) + ", this generator's has " + c10::str(current.sizes()));
  at::Tensor state = t.contiguous();
  validate_generator_state(live, state, where);
  return state;
}

}  // namespace

void validate_generator_state(at::Generator live, const at::Tensor& state, const std::string& where) {
  // Bytes of the right size can still be refused by set_state (an mt19937
  // state that is not seeded, or whose position lies outside its 624 words):
  // tried on a fresh generator, so that the refusal comes before anything is
  // applied, and never after the model and optimizers were (a half-restored
  // run). Not on a clone of the live one: LibTorch 1.13's Generator::clone
  // leaks the copy. A CUDA generator's set_state checks the size only, which
  // the caller did.
  if (live.device().type() != c10::DeviceType::CPU) return;
  at::Generator trial = at::make_generator<at::CPUGeneratorImpl>();
  try {
    trial.set_state(state);
  } catch (const std::exception& e) {
    const std::string message = e.what();
    fail(ErrorCode::IO, where + " is not a valid generator state (" + message.substr(0, message.find('\n')) + ")");
  }
}

namespace {

int64_t non_negative(const c10::IValue& v, const std::string& where) {
  require(v.isInt() && v.toInt() >= 0, ErrorCode::IO, where + " is " + describe(v) + ", not a non-negative integer");
  return v.toInt();
}

}  // namespace

std::array<uint32_t, 624> numpy_mt_state(uint32_t seed) {
  std::array<uint32_t, kN> mt{};
  init_genrand(mt, seed);
  return mt;
}

std::array<uint32_t, 624> python_mt_state(uint64_t seed) {
  // CPython's random_seed: the integer's 32-bit words, least significant first (at least one).
  std::vector<uint32_t> key{static_cast<uint32_t>(seed)};
  if (seed >> 32) key.push_back(static_cast<uint32_t>(seed >> 32));
  std::array<uint32_t, kN> mt{};
  init_genrand(mt, 19650218u);
  size_t i = 1, j = 0;
  for (size_t k = std::max<size_t>(kN, key.size()); k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1664525u)) + key[j] + static_cast<uint32_t>(j);
    if (++i >= kN) {
      mt[0] = mt[kN - 1];
      i = 1;
    }
    if (++j >= key.size()) j = 0;
  }
  for (size_t k = kN - 1; k > 0; --k) {
    mt[i] = (mt[i] ^ ((mt[i - 1] ^ (mt[i - 1] >> 30)) * 1566083941u)) - static_cast<uint32_t>(i);
    if (++i >= kN) {
      mt[0] = mt[kN - 1];
      i = 1;
    }
  }
  mt[0] = 0x80000000u;
  return mt;
}

std::string pickle_random_states(int64_t step, const std::vector<DataLoader::Position>& positions) {
  const uint64_t seed = at::detail::getDefaultCPUGenerator().current_seed();
  Dict d(c10::StringType::get(), c10::AnyType::get());
  d.insert("step", step);
  // (version 3, 624 words + the index 624 of a freshly seeded generator, no cached gauss)
  c10::impl::GenericList python = words(python_mt_state(seed));
  python.push_back(static_cast<int64_t>(kN));
  d.insert("random_state",
           c10::ivalue::Tuple::create({int64_t{3}, c10::ivalue::Tuple::create(python.vec()), c10::IValue()}));
  // numpy keeps its words in an ndarray, a class a data-only pickle cannot
  // name; np.random.set_state takes a list as well. numpy's seeds are 32-bit.
  d.insert("numpy_random_seed",
           c10::ivalue::Tuple::create({std::string("MT19937"), words(numpy_mt_state(static_cast<uint32_t>(seed))),
                                       int64_t{kN}, int64_t{0}, 0.0}));
  c10::List<at::Tensor> cuda;
  for (auto& [name, state] : generator_states()) {
    if (name == "cpu") {
      d.insert("torch_manual_seed", state);
    } else {
      cuda.push_back(state);
    }
  }
  d.insert("torch_cuda_manual_seed", cuda);
  c10::impl::GenericList loaders(c10::AnyType::get());
  for (const DataLoader::Position& p : positions) {
    // The offset only after a resume at another world size: [epoch, batches_consumed, sampler_offset].
    c10::List<int64_t> position({static_cast<int64_t>(p.epoch), p.batches_consumed});
    if (p.sampler_offset != 0) position.push_back(p.sampler_offset);
    loaders.push_back(position);
  }
  d.insert("libaccel_dataloaders", loaders);
  return pickle_state_dict(d);
}

RandomStates read_random_states(const std::string& bytes, size_t loaders, const std::string& label) {
  // Python's file holds NumPy's state too: read as inert, never used.
  const c10::IValue value = unpickle_state_dict(bytes, label, PickleVocabulary::RandomStates);
  require(value.isGenericDict(), ErrorCode::IO, label + " is a " + value.tagKind() + ", not a dict");
  const Dict d = value.toGenericDict();
  auto field = [&](const std::string& key) -> const c10::IValue& {
    auto it = d.find(key);
    require(it != d.end(), ErrorCode::IO, label + " lacks \"" + key + "\"");
    return it->value();
  };
  RandomStates out;
  // Accelerate 0.22 writes no step (later versions do): the window then starts afresh.
  if (d.find("step") != d.end()) {
    out.step = non_negative(field("step"), label + ": \"step\"");
    out.has_step = true;
  }
  out.cpu = checked_state(field("torch_manual_seed"), at::detail::getDefaultCPUGenerator(),
                          label + ": \"torch_manual_seed\"");
  if (d.find("torch_cuda_manual_seed") != d.end()) {
    const c10::IValue& cuda = field("torch_cuda_manual_seed");
    require(cuda.isList(), ErrorCode::IO, label + ": \"torch_cuda_manual_seed\" is " + describe(cuda) + ", not a list");
    const auto states = cuda.toListRef();
    const size_t devices = torch::cuda::is_available() ? torch::cuda::device_count() : 0;
    // Saved on a machine with more GPUs: the devices here take theirs.
    for (size_t i = 0; i < std::min(devices, states.size()); ++i) {
      at::Generator gen = at::globalContext().defaultGenerator(c10::Device(c10::kCUDA, static_cast<int8_t>(i)));
      out.cuda.emplace_back(
          gen, checked_state(states[i], gen, label + ": \"torch_cuda_manual_seed\"[" + std::to_string(i) + "]"));
    }
  }
  // Only libaccel writes positions; Accelerate's loaders start where they
  // stand (its users skip batches themselves), and so do ours then.
  if (d.find("libaccel_dataloaders") == d.end()) return out;
  const c10::IValue& saved = field("libaccel_dataloaders");
  const std::string where = label + ": \"libaccel_dataloaders\"";
  require(saved.isList() && saved.toListRef().size() == loaders, ErrorCode::IO,
          where + " does not hold the positions of " + std::to_string(loaders) + " dataloaders");
  const auto list = saved.toListRef();
  for (size_t i = 0; i < list.size(); ++i) {
    const std::string at = where + "[" + std::to_string(i) + "]";
    require(list[i].isList() && (list[i].toListRef().size() == 2 || list[i].toListRef().size() == 3), ErrorCode::IO,
            at + " is not [epoch, batches_consumed] or [epoch, batches_consumed, sampler_offset]");
    const auto fields = list[i].toListRef();
    out.positions.push_back({static_cast<uint64_t>(non_negative(fields[0], at + ": epoch")),
                             non_negative(fields[1], at + ": batches_consumed"),
                             fields.size() == 3 ? non_negative(fields[2], at + ": sampler_offset") : 0});
  }
  return out;
}

}  // namespace accel::detail
