#include "accelerator/model_file_shards.hpp"

#include <ATen/ATen.h>

#include <cstdio>
#include <exception>
#include <filesystem>
#include <nlohmann/json.hpp>

#include "accel/error.hpp"
#include "core/file_io.hpp"
#include "formats/safetensors.hpp"
#include "formats/tensor_io.hpp"
#include "sharding/full_shard.hpp"

namespace accel::detail {

std::string model_shard_name(size_t index, size_t count, bool safe) {
  char name[64];
  std::snprintf(name, sizeof name, safe ? "model-%05zu-of-%05zu.safetensors" : "pytorch_model-%05zu-of-%05zu.bin",
                index, count);
  return name;
}

std::vector<std::vector<size_t>> split_by_size(const std::vector<int64_t>& bytes, int64_t limit) {
  std::vector<std::vector<size_t>> shards(1);
  int64_t shard_bytes = 0;
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (!shards.back().empty() && shard_bytes + bytes[i] > limit) {
      shards.emplace_back();
      shard_bytes = 0;
    }
    shards.back().push_back(i);
    shard_bytes += bytes[i];
  }
  return shards;
}

namespace {

struct Entry {
  std::string name;
  at::Tensor tensor;  // a unit's parameter holds its values only while the unit is gathered
  int64_t unit = -1;  // -1: whole on every process (a buffer, a frozen parameter)
  std::vector<int64_t> shape;
};

// Passes bytes on until the first failure, then drops them; the failure is
// rethrown at the end, after the collective gathers every process expects.
class FirstFailureSink final : public ByteSink {
 public:
  explicit FirstFailureSink(ByteSink* sink) : sink_(sink) {}
  void write(const void* data, size_t n) override {
    if (failure || sink_ == nullptr) return;
    try {
      sink_->write(data, n);
    } catch (...) {
      failure = std::current_exception();
    }
  }
  void set(ByteSink* sink) { sink_ = sink; }
  std::exception_ptr failure;

 private:
  ByteSink* sink_;
};

}  // namespace

void save_full_shard_model(const ModelImpl& model, const std::string& dir, int64_t max_shard_bytes, bool writes) {
  FullShard& shard = *model.full_shard();
  std::vector<Entry> entries;
  std::vector<int64_t> bytes;
  for (const auto& [name, tensor] : model.state_dict()) {
    Entry e{name, tensor, -1, tensor.sizes().vec()};
    e.unit = shard.unit_of(tensor, &e.shape);
    int64_t numel = 1;
    for (int64_t d : e.shape) numel *= d;
    bytes.push_back(numel * static_cast<int64_t>(tensor.element_size()));
    entries.push_back(std::move(e));
  }
  const std::vector<std::vector<size_t>> files = split_by_size(bytes, max_shard_bytes);

  // Every process walks the entries in order, gathering each one's unit (and
  // releasing the one before); the writer writes as it walks.
  int64_t gathered = -1;
  size_t next = 0;
  auto advance = [&](size_t through) {
    for (; next <= through && next < entries.size(); ++next) {
      const int64_t unit = entries[next].unit;
      if (unit < 0 || unit == gathered) continue;
      if (gathered >= 0) shard.release(static_cast<size_t>(gathered));
      shard.gather(static_cast<size_t>(unit));
      gathered = unit;
    }
  };
  FirstFailureSink out(nullptr);
  if (writes) {
    try {
      std::error_code error;
      std::filesystem::create_directories(dir, error);
      require(!error, ErrorCode::IO, "cannot create directory " + dir + ": " + error.message());
    } catch (...) {
      out.failure = std::current_exception();
    }
  }
  nlohmann::json weight_map = nlohmann::json::object();
  int64_t total = 0;
  for (size_t f = 0; f < files.size(); ++f) {
    const std::string name = files.size() == 1 ? "model.safetensors" : model_shard_name(f + 1, files.size(), true);
    if (writes && !out.failure) {
      try {
        std::vector<safetensors::TensorView> views;
        for (size_t i : files[f]) {
          const Entry& e = entries[i];
          weight_map[e.name] = name;
          total += bytes[i];
          safetensors::TensorView view{
              e.name, safetensors_dtype(e.tensor.scalar_type()), e.shape, nullptr, static_cast<size_t>(bytes[i]), {}};
          view.stream = [&, i](ByteSink& sink) {
            advance(i);
            const at::Tensor host = entries[i].tensor.detach().to(at::kCPU).contiguous();
            require(host.sizes().vec() == entries[i].shape, ErrorCode::Internal,
                    "save_model: " + entries[i].name + " is not whole after its unit's gather");
            sink.write(host.data_ptr(), static_cast<size_t>(host.numel()) * host.element_size());
          };
          views.push_back(std::move(view));
        }
        AtomicFileWriter file(dir + "/" + name);
        out.set(&file);
        safetensors::write(out, std::move(views), {{"format", "pt"}}, /*sort_by_name=*/false);
        out.set(nullptr);
        if (!out.failure) file.commit();
      } catch (...) {
        out.set(nullptr);
        if (!out.failure) out.failure = std::current_exception();
      }
    }
    if (!files[f].empty()) advance(files[f].back());  // what a failed write left, and every other process's walk
  }
  if (gathered >= 0) shard.release(static_cast<size_t>(gathered));
  if (out.failure) std::rethrow_exception(out.failure);
  if (writes && files.size() > 1) {
    // nlohmann::json keeps keys sorted, as Accelerate's json.dumps(sort_keys=True).
    nlohmann::json index;
    index["metadata"]["total_size"] = total;
    index["weight_map"] = weight_map;
    write_file_atomically(dir + "/model.safetensors.index.json", index.dump(2, ' ', true) + "\n");
  }
}

}  // namespace accel::detail
