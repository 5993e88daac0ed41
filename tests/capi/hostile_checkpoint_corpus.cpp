// The hostile-pickle corpus of issue 43 (tests/checkpoint/make_hostile_pickles.py)
// through load_state, as someone who can write a checkpoint directory would
// hand it over: each pickle in place of optimizer.bin, scheduler.bin,
// random_states_0.pkl and custom_checkpoint_0.pkl, with manifest.json
// re-recorded to match (size and XXH3), so that only the readers stand between
// the bytes and the run. Every case must be an ACCEL_ERR_IO or
// ACCEL_ERR_INVALID_ARGUMENT naming the file; nothing may be applied (a
// save_state after the failed load equals the one before, file for file: the
// model, optimizer, scheduler, generator, loader position, step and custom
// object all live in it); no crash. C++ for the files and the JSON, but
// libaccel is reached through its C ABI only, so this runs in the sanitizer
// build too (scripts/test-sanitizers.sh).
//
// Memory: every declared length is checked against the bytes that remain, and
// every record against the archive, before anything is allocated; the pickle
// reader holds at most 2^18 stack items and 2^20 memo entries (under 256 bytes
// each with their values, src/formats/torch_pickle.cpp). The largest file
// here is 2 MB, so one load needs at most a few copies of the checkpoint's
// files plus 256 bytes per pickle byte, about 520 MB for the 2 MB pickles;
// the test allows peak RSS to grow by 768 MiB over the whole corpus (the
// bombs asked for 4 GiB and 2^63 bytes). Under AddressSanitizer, whose
// quarantine keeps freed memory resident, the allocator's own
// allocation_size_too_big and RSS limits stand in for this check.
#include <sys/resource.h>
#include <xxhash.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "accel/accel.h"
#include "accel/accel_checkpoint.h"
#include "capi_test.h"

namespace fs = std::filesystem;

namespace {

std::string read_all(const fs::path& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_all(const fs::path& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary | std::ios::trunc) << bytes;
}

// Replaces a checkpoint file and records its size and checksum in the manifest.
void tamper(const fs::path& dir, const std::string& name, const std::string& bytes) {
  write_all(dir / name, bytes);
  nlohmann::json manifest = nlohmann::json::parse(read_all(dir / "manifest.json"));
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(bytes.data(), bytes.size())));
  manifest["files"][name] = {{"bytes", bytes.size()}, {"xxh3", hex}};
  write_all(dir / "manifest.json", manifest.dump());
}

// Every file of a save, by name: what the run holds.
std::map<std::string, std::string> snapshot(accel_accelerator* acc, const fs::path& dir) {
  fs::remove_all(dir);
  EXPECT_OK(accel_accelerator_save_state(acc, dir.c_str()));
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::directory_iterator(dir)) files[entry.path().filename()] = read_all(entry.path());
  return files;
}

struct Counter {
  int64_t value = 0;
  int loads = 0;
};

accel_status counter_save(void* user, accel_bytes_writer* writer) {
  return accel_bytes_write(writer, &static_cast<Counter*>(user)->value, sizeof(int64_t));
}

accel_status counter_load(void* user, const void* data, size_t size) {
  auto* c = static_cast<Counter*>(user);
  if (size != sizeof(int64_t)) {
    accel_set_error("the counter's state is not 8 bytes");
    return ACCEL_ERR_IO;
  }
  std::memcpy(&c->value, data, sizeof(int64_t));
  ++c->loads;
  return ACCEL_OK;
}

accel_dataset* dataset() {
  static float x[24 * 4];
  static int64_t y[24];
  for (int i = 0; i < 24; ++i) {
    y[i] = i % 3;
    for (int j = 0; j < 4; ++j) x[i * 4 + j] = static_cast<float>((i * 7 + j * 3) % 11) / 5.0f - 1.0f;
  }
  int64_t xshape[2] = {24, 4}, yshape[1] = {24};
  accel_tensor *inputs = nullptr, *targets = nullptr;
  accel_dataset* out = nullptr;
  EXPECT_OK(accel_tensor_from_buffer(x, sizeof x, ACCEL_FLOAT32, xshape, 2, &inputs));
  EXPECT_OK(accel_tensor_from_buffer(y, sizeof y, ACCEL_INT64, yshape, 1, &targets));
  EXPECT_OK(accel_dataset_from_tensors(inputs, targets, &out));
  accel_tensor_free(inputs);
  accel_tensor_free(targets);
  return out;
}

void train(accel_accelerator* acc, accel_model* model, accel_optimizer* opt, accel_scheduler* sched,
           accel_dataloader* loader, int steps) {
  for (int done = 0; done < steps;) {
    accel_tensor *x = nullptr, *y = nullptr, *logits = nullptr, *loss = nullptr;
    EXPECT_OK(accel_dataloader_next(loader, &x, &y));
    if (x == nullptr) continue;  // the epoch ended: the next call starts another
    EXPECT_OK(accel_optimizer_zero_grad(opt));
    EXPECT_OK(accel_model_forward(model, x, &logits));
    EXPECT_OK(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, logits, y, &loss));
    EXPECT_OK(accel_accelerator_backward(acc, loss));
    EXPECT_OK(accel_optimizer_step(opt));
    EXPECT_OK(accel_scheduler_step(sched));
    accel_tensor_free(loss);
    accel_tensor_free(logits);
    accel_tensor_free(x);
    accel_tensor_free(y);
    ++done;
  }
}

long peak_rss_kib() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  return usage.ru_maxrss;
}

#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAddressSanitizer = true;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kAddressSanitizer = true;
#else
constexpr bool kAddressSanitizer = false;
#endif
#else
constexpr bool kAddressSanitizer = false;
#endif

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: test_hostile_checkpoints CORPUS_DIR (from make_hostile_pickles.py)\n");
    return 2;
  }
  const fs::path corpus = fs::path(argv[1]) / "archives";
  const fs::path root = fs::absolute("hostile_checkpoints");
  fs::remove_all(root);
  fs::create_directories(root);

  accel_accelerator* acc = nullptr;
  accel_model* model = nullptr;
  accel_optimizer* opt = nullptr;
  accel_scheduler* sched = nullptr;
  accel_dataloader* loader = nullptr;
  EXPECT_OK(accel_accelerator_create(nullptr, &acc));
  EXPECT_OK(accel_accelerator_set_seed(acc, 5));
  EXPECT_OK(accel_model_from_json(R"([{"type": "Linear", "in_features": 4, "out_features": 3}])", &model));
  accel_optimizer_options oopts;
  accel_optimizer_options_init(&oopts, ACCEL_OPTIM_SGD);
  oopts.lr = 0.1;
  oopts.momentum = 0.9;  // a momentum buffer per parameter: tensors in optimizer.bin
  EXPECT_OK(accel_optimizer_create(model, &oopts, &opt));
  accel_scheduler_options sopts;
  accel_scheduler_options_init(&sopts, ACCEL_SCHED_STEP);
  sopts.step_size = 2;
  EXPECT_OK(accel_scheduler_create(opt, &sopts, &sched));
  accel_dataloader_options lopts;
  accel_dataloader_options_init(&lopts);
  lopts.batch_size = 4;
  lopts.shuffle = 1;
  lopts.seed = 3;
  accel_dataset* data = dataset();
  EXPECT_OK(accel_dataloader_create(data, &lopts, &loader));
  accel_dataset_free(data);
  EXPECT_OK(accel_accelerator_prepare_model(acc, model));
  EXPECT_OK(accel_accelerator_prepare_optimizer(acc, opt));
  EXPECT_OK(accel_accelerator_prepare_scheduler(acc, sched));
  EXPECT_OK(accel_accelerator_prepare_dataloader(acc, loader));
  Counter counter;
  counter.value = 3;
  accel_checkpoint_callbacks cb;
  accel_checkpoint_callbacks_init(&cb);
  cb.save = counter_save;
  cb.load = counter_load;
  EXPECT_OK(accel_accelerator_register_for_checkpointing(acc, &cb, &counter));

  train(acc, model, opt, sched, loader, 3);
  const fs::path good = root / "good";
  EXPECT_OK(accel_accelerator_save_state(acc, good.c_str()));
  // The run moves on, so that anything a failed load applied would show.
  train(acc, model, opt, sched, loader, 4);
  counter.value = 9;
  const std::map<std::string, std::string> before = snapshot(acc, root / "before");

  const char* const targets[] = {"optimizer.bin", "scheduler.bin", "random_states_0.pkl", "custom_checkpoint_0.pkl"};
  std::vector<fs::path> cases;
  for (const auto& entry : fs::directory_iterator(corpus)) cases.push_back(entry.path());
  std::sort(cases.begin(), cases.end());
  EXPECT(cases.size() >= 50);
  const long rss_before = peak_rss_kib();
  const fs::path work = root / "work";
  int refused = 0;
  for (const fs::path& file : cases) {
    const std::string bytes = read_all(file);
    for (const char* target : targets) {
      fs::remove_all(work);
      fs::copy(good, work, fs::copy_options::recursive);
      tamper(work, target, bytes);
      const accel_status status = accel_accelerator_load_state(acc, work.c_str());
      const std::string message = accel_last_error();
      const bool named = message.find((work / target).string()) != std::string::npos;
      EXPECT(status == ACCEL_ERR_IO || status == ACCEL_ERR_INVALID_ARGUMENT);
      EXPECT(named);
      if (!named || (status != ACCEL_ERR_IO && status != ACCEL_ERR_INVALID_ARGUMENT)) {
        std::fprintf(stderr, "  case %s in %s: status %d: %s\n", file.filename().c_str(), target, status,
                     message.c_str());
      }
      refused += status != ACCEL_OK;
      EXPECT(snapshot(acc, root / "after") == before);
      EXPECT(counter.value == 9);
    }
  }
  std::printf("%d of %zu hostile loads refused\n", refused, cases.size() * 4);
  const long growth_kib = peak_rss_kib() - rss_before;
  std::printf("peak RSS grew by %ld MiB over the corpus\n", growth_kib / 1024);
  if (!kAddressSanitizer) EXPECT(growth_kib < 768L * 1024);

  // The checkpoint itself still loads: the refusals were the pickles'.
  EXPECT_OK(accel_accelerator_load_state(acc, good.c_str()));
  EXPECT(counter.value == 3 && counter.loads >= 1);

  accel_dataloader_free(loader);
  accel_scheduler_free(sched);
  accel_optimizer_free(opt);
  accel_model_free(model);
  accel_accelerator_free(acc);
  fs::remove_all(root);
  return capi_report("test_hostile_checkpoints");
}
