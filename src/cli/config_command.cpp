#include "cli/config_command.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <istream>
#include <nlohmann/json.hpp>
#include <ostream>
#include <vector>

namespace accel::cli {

namespace {

class Questionnaire {
 public:
  Questionnaire(std::istream& in, std::ostream& out) : in_(in), out_(out) {}

  std::string ask(const std::string& question, const std::string& fallback) {
    out_ << question << " [" << fallback << "]: " << std::flush;
    std::string answer;
    if (!std::getline(in_, answer)) {
      out_ << '\n';
      throw ConfigFileError("no answer to \"" + question + "\": input ended; nothing was written");
    }
    // Trim: a stray space must not make an address or a number wrong.
    answer.erase(0, answer.find_first_not_of(" \t\r"));
    answer.erase(answer.find_last_not_of(" \t\r") + 1);
    return answer.empty() ? fallback : answer;
  }

  int ask_int(const std::string& question, int fallback, int minimum, int maximum) {
    for (;;) {
      std::string answer = ask(question, std::to_string(fallback));
      try {
        size_t used = 0;
        int value = std::stoi(answer, &used);
        if (used == answer.size() && value >= minimum && value <= maximum) return value;
      } catch (const std::exception&) {
      }
      out_ << "Please enter an integer from " << minimum << " to " << maximum << ".\n";
    }
  }

  // A numbered list; the answer is the number or the value itself.
  std::string choose(const std::string& question, const std::vector<std::pair<std::string, std::string>>& choices) {
    for (;;) {
      out_ << question << '\n';
      for (size_t i = 0; i < choices.size(); ++i) out_ << "  " << i << ") " << choices[i].second << '\n';
      std::string answer = ask("Your choice", "0");
      for (size_t i = 0; i < choices.size(); ++i) {
        if (answer == std::to_string(i) || answer == choices[i].first) return choices[i].first;
      }
      out_ << "Please enter a number from 0 to " << choices.size() - 1 << ".\n";
    }
  }

  bool yes_no(const std::string& question, bool fallback) {
    for (;;) {
      std::string answer = ask(question + " (yes/no)", fallback ? "yes" : "no");
      if (answer == "yes" || answer == "y") return true;
      if (answer == "no" || answer == "n") return false;
      out_ << "Please answer yes or no.\n";
    }
  }

 private:
  std::istream& in_;
  std::ostream& out_;
};

}  // namespace

ConfigValues ask_config_questions(std::istream& in, std::ostream& out) {
  Questionnaire q(in, out);
  ConfigValues values;
  values.compute_environment = "LOCAL_MACHINE";
  values.distributed_type =
      q.choose("Which type of machine are you using?",
               {{"NO", "No distributed training"}, {"MULTI_CPU", "multi-CPU"}, {"MULTI_GPU", "multi-GPU"}});
  bool distributed = *values.distributed_type != "NO";
  values.num_machines = distributed ? q.ask_int("How many different machines will you use?", 1, 1, 1 << 16) : 1;
  if (*values.num_machines > 1) {
    values.machine_rank = q.ask_int("What is the rank of this machine?", 0, 0, *values.num_machines - 1);
    values.main_process_ip =
        q.ask("What is the IP address of the machine that will host the main process?", "127.0.0.1");
    values.main_process_port =
        q.ask_int("What is the port you will use to communicate with the main process?", 29500, 1, 65535);
  } else {
    values.machine_rank = 0;
  }
  if (distributed) {
    for (;;) {
      values.num_processes =
          q.ask_int("How many processes in total will you use (over all machines)?", *values.num_machines, 1, 1 << 20);
      if (*values.num_processes % *values.num_machines == 0) break;
      out << "The processes must divide evenly over the " << *values.num_machines << " machines.\n";
    }
  } else {
    values.num_processes = 1;
  }
  if (*values.distributed_type == "MULTI_GPU") {
    values.gpu_ids = q.ask("What GPU(s) (by id) should be used on this machine, as a comma-separated list?", "all");
    values.use_cpu = false;
  } else if (*values.distributed_type == "MULTI_CPU") {
    values.use_cpu = true;
  } else {
    values.use_cpu = q.yes_no("Do you want to run your training on CPU only (even if a GPU is available)?", false);
  }
  values.mixed_precision =
      q.choose("Do you wish to use mixed precision?", {{"no", "no"}, {"fp16", "fp16"}, {"bf16", "bf16"}});
  return values;
}

bool write_default_config(const std::string& path, const std::string& mixed_precision, std::optional<int> cuda_devices,
                          std::ostream& out) {
  if (std::filesystem::exists(path)) {
    out << "Configuration already exists at " << path << ", will not override. Run `accel config` or pass another "
        << "--config_file.\n";
    return false;
  }
  // The keys and values of Accelerate 1.x's write_basic_config, which writes
  // JSON with sorted keys whatever the file's extension (JSON is YAML too);
  // 0.22 wrote the same without enable_cpu_affinity.
  nlohmann::json config = {{"compute_environment", "LOCAL_MACHINE"},
                           {"debug", false},
                           {"distributed_type", "NO"},
                           {"downcast_bf16", false},
                           {"enable_cpu_affinity", false},
                           {"machine_rank", 0},
                           {"main_training_function", "main"},
                           {"mixed_precision", mixed_precision},
                           {"num_machines", 1},
                           {"num_processes", 1},
                           {"rdzv_backend", "static"},
                           {"same_network", false},
                           {"tpu_use_cluster", false},
                           {"tpu_use_sudo", false},
                           {"use_cpu", true}};
  const int gpus = cuda_devices.value_or(0);
  // Unknown (no accel-selftest to ask LibTorch): not use_cpu, so a GPU build
  // still finds its GPU.
  if (gpus > 0 || !cuda_devices) {
    config["use_cpu"] = false;
    config["num_processes"] = std::max(gpus, 1);
    if (gpus > 1) config["distributed_type"] = "MULTI_GPU";
  }
  std::error_code ignored;
  std::filesystem::path target(path);
  if (target.has_parent_path()) std::filesystem::create_directories(target.parent_path(), ignored);
  std::ofstream file(path, std::ios::trunc);
  file << config.dump(2) << '\n';
  if (!file.flush()) throw ConfigFileError("cannot write config file " + path);
  out << "accel configuration saved at " << path << "\n";
  return true;
}

}  // namespace accel::cli
