// Where a synced step's time goes (issue: two-process speed). For one workload,
// in one invocation and alternating within each round, every rank measures:
//   nocomm   steps of an unprepared copy of the model (no gradient sync): the no-communication bound
//   raw      c10d's Gloo allreduce of a flat buffer with the model's parameter bytes
//   direct   the library's allreduce of the same buffer (for 2 ranks on Gloo: Gloo's
//            synchronous pairs on the calling thread, state/gloo_direct.hpp)
//   synced   prepared steps, timed without anything listening (the library's default)
//   synced_c10d  the same with every allreduce handed to c10d's Gloo (ACCEL_GLOO_DIRECT=0)
//   spans    prepared steps again, with a RecordFunction observer summing the library's
//            "accel::..." spans (core/trace_span.hpp; the same spans the profiler's timeline shows)
// and prints one BREAKDOWN line per rank (medians over rounds, ms per step). bench/breakdown.py
// turns the lines into the table of docs/benchmarks.md.
//   build/bin/accel launch --nproc_per_node 2 --master_port 0 build/bin/step_breakdown --workload tiny \
//       --steps 400 --rounds 5 --threads 1
#include <ATen/ATen.h>
#include <ATen/record_function.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <exception>
#include <map>
#include <string>
#include <vector>

#include "accel/accel.hpp"
#include "bench_common.hpp"
#include "accelerator/accelerator_state.hpp"

namespace {

using SpanClock = std::chrono::steady_clock;

// Filled by the observer on the training thread only (thread-local callback).
std::map<std::string, double> span_seconds;

struct SpanStart : at::ObserverContext {
  SpanClock::time_point start = SpanClock::now();
};

std::unique_ptr<at::ObserverContext> on_span_start(const at::RecordFunction&) { return std::make_unique<SpanStart>(); }

void on_span_end(const at::RecordFunction& fn, at::ObserverContext* context) {
  auto* start = static_cast<SpanStart*>(context);
  span_seconds[fn.name()] += std::chrono::duration<double>(SpanClock::now() - start->start).count();
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  return v.empty() ? 0.0 : v[v.size() / 2];
}

}  // namespace

int main(int argc, char** argv) try {
  int rounds = 5;
  std::vector<char*> rest{argv[0]};
  for (int i = 1; i < argc; ++i) {
    if (std::string(argv[i]) == "--rounds" && i + 1 < argc) {
      rounds = std::stoi(argv[++i]);
    } else {
      rest.push_back(argv[i]);
    }
  }
  bench::Args args = bench::parse_args(static_cast<int>(rest.size()), rest.data());
  const bench::Workload& w = bench::workload(args.workload);
  accel::Accelerator acc;
  auto& pg = acc.state()->process_group;
  if (!pg) throw std::runtime_error("run with 2 or more processes: accel launch --nproc_per_node 2 ...");

  auto options = accel::OptimizerOptions::defaults(accel::OptimizerKind::AdamW);
  options.lr = 1e-3;
  options.weight_decay = 0.01;
  accel::Model model = accel::Model::from_json(w.json);
  accel::Optimizer optimizer(model, options);
  acc.prepare(model);
  acc.prepare(optimizer);
  accel::Model local_model = accel::Model::from_json(w.json);
  accel::Optimizer local_optimizer(local_model, options);
  bench::Data data(w, acc.process_index());

  int64_t param_numel = 0;
  for (const auto& p : model.parameters()) param_numel += p.numel();
  at::Tensor flat = at::ones({param_numel}, at::kFloat);

  auto train = [&](accel::Model& m, accel::Optimizer& o, bool prepared) {
    acc.wait_for_everyone();
    auto start = bench::Clock::now();
    for (int64_t i = 0; i < args.steps; ++i) {
      size_t b = static_cast<size_t>(i) % data.x.size();
      o.zero_grad();
      at::Tensor loss = accel::compute_loss(accel::LossKind::CrossEntropy, m.forward(data.x[b]), data.y[b]);
      if (prepared) {
        acc.backward(loss);
      } else {
        loss.backward();
      }
      o.step();
    }
    return bench::since(start) * 1e3 / static_cast<double>(args.steps);
  };
  const bool default_direct = pg->gloo_direct();
  auto allreduce = [&](bool c10d_only) {
    pg->set_gloo_direct(!c10d_only && default_direct);
    acc.wait_for_everyone();
    auto start = bench::Clock::now();
    for (int64_t i = 0; i < args.steps; ++i) pg->allreduce(flat, "raw allreduce");
    double ms = bench::since(start) * 1e3 / static_cast<double>(args.steps);
    pg->set_gloo_direct(default_direct);
    return ms;
  };

  // The unprepared model's gradients averaged by hand after backward: the
  // serial composition, through the same allreduce, without hooks or buckets.
  auto manual = [&] {
    std::vector<at::Tensor> params = local_model.parameters();
    acc.wait_for_everyone();
    auto start = bench::Clock::now();
    for (int64_t i = 0; i < args.steps; ++i) {
      size_t b = static_cast<size_t>(i) % data.x.size();
      local_optimizer.zero_grad();
      accel::compute_loss(accel::LossKind::CrossEntropy, local_model.forward(data.x[b]), data.y[b]).backward();
      int64_t offset = 0;
      for (auto& p : params) {
        flat.narrow(0, offset, p.numel()).copy_(p.grad().reshape(-1));
        offset += p.numel();
      }
      pg->allreduce(flat, "manual allreduce");
      offset = 0;
      for (auto& p : params) {
        p.mutable_grad().copy_(flat.narrow(0, offset, p.numel()).view_as(p));
        offset += p.numel();
      }
      local_optimizer.step();
    }
    return bench::since(start) * 1e3 / static_cast<double>(args.steps);
  };

  for (int64_t i = 0; i < args.warmup; ++i) {
    train(model, optimizer, true);
    train(local_model, local_optimizer, false);
  }
  std::vector<double> nocomm, raw, direct, manual_ms, synced, synced_c10d, spanned;
  std::map<std::string, std::vector<double>> spans;
  for (int r = 0; r < rounds; ++r) {
    nocomm.push_back(train(local_model, local_optimizer, false));
    raw.push_back(allreduce(true));
    direct.push_back(allreduce(false));
    manual_ms.push_back(manual());
    synced.push_back(train(model, optimizer, true));
    pg->set_gloo_direct(false);
    synced_c10d.push_back(train(model, optimizer, true));
    pg->set_gloo_direct(default_direct);
    span_seconds.clear();
    auto handle = at::addThreadLocalCallback(
        at::RecordFunctionCallback(on_span_start, on_span_end).scopes({at::RecordScope::USER_SCOPE}));
    spanned.push_back(train(model, optimizer, true));
    at::removeCallback(handle);
    for (const auto& [name, seconds] : span_seconds) spans[name].push_back(seconds * 1e3 / args.steps);
  }

  std::string span_json;
  for (const auto& [name, values] : spans) {
    span_json += (span_json.empty() ? "" : ",") + ("\"" + name + "\":" + std::to_string(median(values)));
  }
  std::printf(
      "BREAKDOWN {\"workload\":\"%s\",\"rank\":%d,\"nproc\":%d,\"threads\":%d,\"param_bytes\":%lld,"
      "\"nocomm_ms\":%.4f,\"raw_allreduce_ms\":%.4f,\"direct_ms\":%.4f,\"manual_ms\":%.4f,\"synced_ms\":%.4f,\"synced_"
      "c10d_ms\":%.4f,\"spanned_ms\":%.4f,\"spans\":{%s}}\n",
      args.workload.c_str(), acc.process_index(), acc.num_processes(), at::get_num_threads(),
      static_cast<long long>(param_numel * 4), median(nocomm), median(raw), median(direct), median(manual_ms),
      median(synced), median(synced_c10d), median(spanned), span_json.c_str());
  std::fflush(stdout);
  return 0;
} catch (const std::exception& e) {
  std::fprintf(stderr, "step_breakdown: %s\n", e.what());
  return 1;
}
