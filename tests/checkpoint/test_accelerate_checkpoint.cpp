// Reading what Python writes with torch.save — Hugging Face's pytorch_model.bin
// and Accelerate's save_state directories — without running code. The
// pickles are built opcode by opcode as Python's pickler (protocol 2) writes a
// state dict, so that each test controls what the file holds; the real thing
// is tested end to end by bindings/python/tests/test_accelerate_checkpoint.py.
#include <ATen/ATen.h>
#include <ATen/CPUGeneratorImpl.h>
#include <caffe2/serialize/inline_container.h>
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>

#include "accel/accel.hpp"
#include "checkpoint/random_states.hpp"
#include "formats/torch_pickle.hpp"
#include "checkpoint/training_run.hpp"

using namespace accel::test;

namespace {

const char* kLinear = R"([{"type": "Linear", "in_features": 2, "out_features": 1}])";

// Protocol-2 pickle text, the opcodes Python's pickler writes for a state dict.
struct Pickle {
  std::string bytes = "\x80\x02";
  Pickle& op(const std::string& code) {
    bytes += code;
    return *this;
  }
  Pickle& global(const std::string& module, const std::string& name) { return op("c" + module + "\n" + name + "\n"); }
  Pickle& str(const std::string& s) {
    bytes += 'X';
    for (int i = 0; i < 4; ++i) bytes += static_cast<char>((s.size() >> (8 * i)) & 0xff);
    bytes += s;
    return *this;
  }
  Pickle& small(int v) { return op(std::string("K") + static_cast<char>(v)); }
  Pickle& real(double v) {
    uint64_t bits;
    std::memcpy(&bits, &v, sizeof bits);
    bytes += 'G';
    for (int i = 7; i >= 0; --i) bytes += static_cast<char>((bits >> (8 * i)) & 0xff);
    return *this;
  }
  Pickle& ordered_dict() { return global("collections", "OrderedDict").op(")R"); }
  // A 1-D float tensor of n elements over storage record key.
  Pickle& tensor(const std::string& key, int n) {
    global("torch._utils", "_rebuild_tensor_v2").op("((").str("storage").global("torch", "FloatStorage").str(key);
    str("cpu").small(n).op("tQ").small(0).small(n).op("\x85").small(1).op("\x85").op("\x89");
    return ordered_dict().op("tR");
  }
  // A [1, n] float tensor over storage record key.
  Pickle& row(const std::string& key, int n) {
    global("torch._utils", "_rebuild_tensor_v2").op("((").str("storage").global("torch", "FloatStorage").str(key);
    str("cpu").small(n).op("tQ").small(0).small(1).small(n).op("\x86").small(n).small(1).op("\x86\x89");
    return ordered_dict().op("tR");
  }
  std::string done() const { return bytes + "."; }
};

std::string floats(std::vector<float> values) {
  return std::string(reinterpret_cast<const char*>(values.data()), values.size() * sizeof(float));
}

// torch.save's zip layout, written by LibTorch's own archive writer.
std::string archive(const std::string& pickle, const std::map<std::string, std::string>& storages = {}) {
  std::string out;
  caffe2::serialize::PyTorchStreamWriter writer([&](const void* data, size_t n) {
    out.append(static_cast<const char*>(data), n);
    return n;
  });
  writer.writeRecord("data.pkl", pickle.data(), pickle.size());
  for (const auto& [key, bytes] : storages) writer.writeRecord("data/" + key, bytes.data(), bytes.size());
  writer.writeEndOfFile();
  return out;
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// A Linear(2, 1)'s state dict as torch.save writes model.state_dict(): an
// OrderedDict with a _metadata attribute; the weight is a view at offset 1.
std::string linear_state_dict(float bias, std::vector<float> weight) {
  Pickle p;
  p.ordered_dict().op("(").str("0.weight");
  p.global("torch._utils", "_rebuild_tensor_v2").op("((").str("storage").global("torch", "FloatStorage").str("0");
  p.str("cpu").small(3).op("tQ").small(1).small(1).small(2).op("\x86").small(2).small(1).op("\x86\x89");
  p.ordered_dict().op("tR").str("0.bias").tensor("1", 1).op("u");
  p.op("}").str("_metadata").ordered_dict().op("(").str("").op("}").str("version").small(1).op("su").op("sb");
  weight.insert(weight.begin(), 42.0f);  // the view skips it
  return archive(p.done(), {{"0", floats(weight)}, {"1", floats({bias})}});
}

// SGD's state_dict() for a Linear(2, 1): the weight's momentum buffer is [1, weight_elements].
std::string sgd_state_dict(int weight_elements, float lr) {
  Pickle p;
  p.op("}(").str("state").op("}(").small(0).op("}").str("momentum_buffer").row("0", weight_elements).op("s");
  p.small(1).op("}").str("momentum_buffer").tensor("1", 1).op("su");
  p.str("param_groups").op("]}(").str("lr").real(lr).str("momentum").real(0.9).str("dampening").small(0);
  p.str("weight_decay").small(0).str("nesterov").op("\x89").str("maximize").op("\x89");
  p.str("params").op("](").small(0).small(1).op("eu").op("au");
  std::vector<float> weight_buffer(static_cast<size_t>(weight_elements), 0.5f);
  return archive(p.done(), {{"0", floats(weight_buffer)}, {"1", floats({0.25f})}});
}

accel::OptimizerOptions sgd_momentum() {
  accel::OptimizerOptions o = accel::OptimizerOptions::defaults(accel::OptimizerKind::Sgd);
  o.lr = 0.5;
  o.momentum = 0.9;
  return o;
}

}  // namespace

TEST(TorchPickle, ReadsAStateDictWithViewsAndMetadata) {
  c10::IValue dict = accel::detail::read_torch_save(linear_state_dict(7, {1, 2}), "sd.bin");
  ASSERT_TRUE(dict.isGenericDict());
  auto d = dict.toGenericDict();
  ASSERT_EQ(d.size(), 2u);
  EXPECT_TRUE(at::equal(d.at("0.weight").toTensor(), at::tensor({1.0f, 2.0f}).reshape({1, 2})));
  EXPECT_TRUE(at::equal(d.at("0.bias").toTensor(), at::tensor({7.0f})));
}

TEST(TorchPickle, RefusesAGlobalOutsideAStateDictNamingIt) {
  Pickle p;
  p.global("os", "system").str("touch /tmp/pwned").op("\x85R");
  std::string message = error_of([&] { accel::detail::read_torch_save(archive(p.done()), "evil.bin"); });
  EXPECT_NE(message.find("evil.bin"), std::string::npos) << message;
  EXPECT_NE(message.find("os.system"), std::string::npos) << message;
  // STACK_GLOBAL (protocol 4) names it just the same.
  Pickle q;
  q.str("builtins").str("eval").op("\x93");
  message = error_of([&] { accel::detail::read_torch_save(archive(q.done()), "evil4.bin"); });
  EXPECT_NE(message.find("builtins.eval"), std::string::npos) << message;
}

TEST(TorchPickle, RefusesATensorBeyondItsStorageAndUnknownOpcodes) {
  Pickle p;
  p.tensor("0", 4);
  std::string message = error_of([&] { accel::detail::read_torch_save(archive(p.done(), {{"0", floats({1})}}), "f"); });
  EXPECT_NE(message.find("storage \"0\" has 4 bytes, not 4 elements"), std::string::npos) << message;
  Pickle q;
  q.op("\x8f");  // EMPTY_SET: a set is not part of a state dict
  message = error_of([&] { accel::detail::read_torch_save(archive(q.done()), "f"); });
  EXPECT_NE(message.find("opcode 0x8f"), std::string::npos) << message;
  // NEWOBJ is read only for an inert class of the file's vocabulary; on an
  // empty stack it is an error, not a crash.
  Pickle n;
  n.op("\x81");
  EXPECT_NE(error_of([&] { accel::detail::read_torch_save(archive(n.done()), "f"); }).find("empty stack"),
            std::string::npos);
  EXPECT_NE(error_of([&] { accel::detail::read_torch_save("not a zip", "f"); }).find("not a torch.save zip"),
            std::string::npos);
  // Truncated anywhere: an IO error naming the file, never a crash or a LibTorch exception.
  const std::string whole = linear_state_dict(7, {1, 2});
  for (size_t n = 4; n < whole.size(); n += 7) {
    try {
      accel::detail::read_torch_save(whole.substr(0, n), "cut.bin");
    } catch (const accel::Error& e) {
      EXPECT_EQ(e.code(), accel::ErrorCode::IO);
      EXPECT_NE(std::string(e.what()).find("cut.bin"), std::string::npos) << e.what();
    }
  }
  // Every byte of data.pkl flipped in turn: refused or read, never anything else.
  Pickle sd;
  sd.ordered_dict().op("(").str("w").tensor("0", 2).op("u");
  const std::string pickle = sd.done();
  for (size_t i = 2; i < pickle.size(); ++i) {
    std::string bad = pickle;
    bad[i] = static_cast<char>(bad[i] ^ 0x5a);
    try {
      accel::detail::read_torch_save(archive(bad, {{"0", floats({1, 2})}}), "flip.bin");
    } catch (const accel::Error& e) {
      EXPECT_NE(std::string(e.what()).find("flip.bin"), std::string::npos) << e.what();
    }
  }
}

TEST(AccelerateCheckpoint, LoadCheckpointInModelReadsPytorchModelBinAndItsIndex) {
  const std::string dir = fresh_dir("pytorch_model_bin");
  std::filesystem::create_directories(dir);
  write_file(dir + "/pytorch_model.bin", linear_state_dict(7, {1, 2}));
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kLinear);
  accel::LoadReport report = accelerator.load_checkpoint_in_model(model, dir + "/pytorch_model.bin", true);
  EXPECT_TRUE(report.missing_keys.empty() && report.unexpected_keys.empty());
  EXPECT_TRUE(at::equal(model.named_parameters()[0].second, at::tensor({1.0f, 2.0f}).reshape({1, 2})));
  // Sharded: the index names the shard.
  std::filesystem::rename(dir + "/pytorch_model.bin", dir + "/pytorch_model-00001-of-00001.bin");
  write_file(dir + "/pytorch_model.bin.index.json",
             R"({"metadata": {"total_size": 12}, "weight_map": {"0.weight": "pytorch_model-00001-of-00001.bin",
                 "0.bias": "pytorch_model-00001-of-00001.bin"}})");
  accel::Model other = accel::Model::from_json(kLinear);
  accelerator.load_checkpoint_in_model(other, dir + "/pytorch_model.bin.index.json", true);
  EXPECT_TRUE(at::equal(other.named_parameters()[1].second, at::tensor({7.0f})));
  // A wrong shape is refused before anything changes.
  accel::Model wide = accel::Model::from_json(R"([{"type": "Linear", "in_features": 3, "out_features": 1}])");
  at::Tensor before = wide.named_parameters()[1].second.clone();
  std::string message =
      error_of([&] { accelerator.load_checkpoint_in_model(wide, dir + "/pytorch_model.bin.index.json"); });
  EXPECT_NE(message.find("\"0.weight\" has shape [1, 2], the model's has [1, 3]"), std::string::npos) << message;
  EXPECT_TRUE(at::equal(before, wide.named_parameters()[1].second));
}

TEST(AccelerateCheckpoint, LoadStateReadsAnAccelerateDirectory) {
  const std::string dir = fresh_dir("accelerate_dir");
  std::filesystem::create_directories(dir);
  write_file(dir + "/pytorch_model.bin", linear_state_dict(7, {1, 2}));
  write_file(dir + "/optimizer.bin", sgd_state_dict(2, 0.125f));
  at::manual_seed(11);
  const at::Tensor saved_rng = at::detail::getDefaultCPUGenerator().get_state();
  write_file(dir + "/random_states_0.pkl", accel::detail::pickle_random_states(0, {}));
  at::manual_seed(12);
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kLinear);
  accel::Optimizer optimizer(model, sgd_momentum());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  accelerator.load_state(dir);
  EXPECT_TRUE(at::equal(model.named_parameters()[0].second, at::tensor({1.0f, 2.0f}).reshape({1, 2})));
  EXPECT_DOUBLE_EQ(optimizer.lr(), 0.125);
  EXPECT_TRUE(at::equal(at::detail::getDefaultCPUGenerator().get_state(), saved_rng));  // torch_manual_seed
  // One step with zero gradients: p -= lr * (0.9 * buffer).
  for (auto& p : model.parameters()) p.mutable_grad() = at::zeros_like(p);
  optimizer.step();
  EXPECT_TRUE(at::allclose(model.named_parameters()[1].second, at::tensor({7.0f - 0.125f * 0.9f * 0.25f})));
}

TEST(AccelerateCheckpoint, AMismatchNamesFileKeyAndShapesAndAppliesNothing) {
  const std::string dir = fresh_dir("accelerate_bad");
  std::filesystem::create_directories(dir);
  write_file(dir + "/pytorch_model.bin", linear_state_dict(7, {1, 2}));
  write_file(dir + "/optimizer.bin", sgd_state_dict(3, 0.125f));  // momentum for a [3] weight
  write_file(dir + "/random_states_0.pkl", accel::detail::pickle_random_states(0, {}));
  accel::Accelerator accelerator;
  accel::Model model = accel::Model::from_json(kLinear);
  accel::Optimizer optimizer(model, sgd_momentum());
  accelerator.prepare(model);
  accelerator.prepare(optimizer);
  const at::Tensor weight = model.named_parameters()[0].second.clone();
  const std::string state = optimizer.state_bytes();
  std::string message = error_of([&] { accelerator.load_state(dir); });
  EXPECT_NE(message.find(dir + "/optimizer.bin"), std::string::npos) << message;
  EXPECT_NE(message.find("state[0][\"momentum_buffer\"] has shape [1, 3], its parameter has [1, 2]"), std::string::npos)
      << message;
  EXPECT_TRUE(at::equal(weight, model.named_parameters()[0].second));
  EXPECT_EQ(state, optimizer.state_bytes());
  EXPECT_DOUBLE_EQ(optimizer.lr(), 0.5);

  // A global outside the vocabulary in the model file, named with the file.
  Pickle evil;
  evil.global("posix", "system").str("true").op("\x85R");
  write_file(dir + "/pytorch_model.bin", archive(evil.done()));
  message = error_of([&] { accelerator.load_state(dir); });
  EXPECT_NE(message.find(dir + "/pytorch_model.bin: the pickle names the global posix.system"), std::string::npos)
      << message;

  // Two processes saved it; one runs. The model and optimizer state are whole
  // (replicated), so they load at any world size, as libaccel's own NO_SHARD
  // checkpoints do; this process takes random_states_0.pkl.
  write_file(dir + "/pytorch_model.bin", linear_state_dict(7, {1, 2}));
  write_file(dir + "/optimizer.bin", sgd_state_dict(2, 0.125f));
  write_file(dir + "/random_states_1.pkl", "");
  accelerator.load_state(dir);
  EXPECT_DOUBLE_EQ(optimizer.lr(), 0.125);
  // A gap in the random states' files is a damaged checkpoint.
  std::filesystem::remove(dir + "/random_states_0.pkl");
  message = error_of([&] { accelerator.load_state(dir); });
  EXPECT_NE(message.find("lacks some of random_states_0.pkl to random_states_1.pkl"), std::string::npos) << message;
}
