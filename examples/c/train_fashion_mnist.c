/*
 * Train a small CNN on Fashion-MNIST with libaccel's C ABI.
 *
 * The same program runs on one process or many:
 *   ./train_fashion_mnist                                   # one process
 *   accel launch --nproc_per_node 2 ./train_fashion_mnist   # two, over Gloo
 *
 * Usage: train_fashion_mnist [--epochs N] [--data DIR] [--max-steps N] [--seed S]
 * Prints the main process's loss every 100 steps ("step 100: loss 0.612345") and
 * one line per epoch: "epoch 1: loss 0.4123, test accuracy 86.20%". The Python,
 * Java and Go examples print the same numbers for the same seed.
 * Exit status 0 on success; any libaccel error is printed with its message.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "accel/accel.h"

#define TRY(call)                                                                                    \
  do {                                                                                               \
    accel_status status_ = (call);                                                                   \
    if (status_ != ACCEL_OK) {                                                                       \
      fprintf(stderr, "%s failed: %s: %s\n", #call, accel_status_name(status_), accel_last_error()); \
      exit(1);                                                                                       \
    }                                                                                                \
  } while (0)

/* Conv(1->16) -> pool -> Conv(16->32) -> pool -> 128 -> 10, PyTorch layer names. */
static const char* kModelSpec =
    "[{\"type\": \"Conv2d\", \"in_channels\": 1, \"out_channels\": 16, \"kernel_size\": 3, \"padding\": 1},"
    " {\"type\": \"ReLU\"},"
    " {\"type\": \"MaxPool2d\", \"kernel_size\": 2},"
    " {\"type\": \"Conv2d\", \"in_channels\": 16, \"out_channels\": 32, \"kernel_size\": 3, \"padding\": 1},"
    " {\"type\": \"ReLU\"},"
    " {\"type\": \"MaxPool2d\", \"kernel_size\": 2},"
    " {\"type\": \"Flatten\"},"
    " {\"type\": \"Linear\", \"in_features\": 1568, \"out_features\": 128},"
    " {\"type\": \"ReLU\"},"
    " {\"type\": \"Linear\", \"in_features\": 128, \"out_features\": 10}]";

/* Fashion-MNIST training-set statistics. */
static const double kMean = 0.2860, kStd = 0.3530;

struct settings {
  int epochs;
  long max_steps; /* per epoch; 0 = the whole epoch */
  unsigned long long seed;
  const char* data_dir;
};

static struct settings parse_args(int argc, char** argv) {
  struct settings s = {2, 0, 42, "/usr/share/datasets/fashion-mnist"};
  for (int i = 1; i < argc; ++i) {
    if (strcmp(argv[i], "--epochs") == 0 && i + 1 < argc) {
      s.epochs = atoi(argv[++i]);
    } else if (strcmp(argv[i], "--max-steps") == 0 && i + 1 < argc) {
      s.max_steps = atol(argv[++i]);
    } else if (strcmp(argv[i], "--seed") == 0 && i + 1 < argc) {
      s.seed = strtoull(argv[++i], NULL, 10);
    } else if (strcmp(argv[i], "--data") == 0 && i + 1 < argc) {
      s.data_dir = argv[++i];
    } else {
      fprintf(stderr, "usage: %s [--epochs N] [--data DIR] [--max-steps N] [--seed S]\n", argv[0]);
      exit(2);
    }
  }
  return s;
}

/* A user's first run often lacks the data: say where it comes from. */
static void require_data(const char* dir) {
  char path[1024];
  FILE* probe;
  snprintf(path, sizeof path, "%s/train-images-idx3-ubyte.gz", dir);
  probe = fopen(path, "rb");
  if (probe != NULL) {
    fclose(probe);
    return;
  }
  fprintf(stderr,
          "Fashion-MNIST is not in %s: install it with `sudo apt install dataset-fashion-mnist` "
          "(Debian, Ubuntu) or pass --data DIR\n",
          dir);
  exit(1);
}

static accel_dataset* load_split(const char* dir, const char* split) {
  char images[1024], labels[1024];
  accel_dataset* dataset = NULL;
  snprintf(images, sizeof images, "%s/%s-images-idx3-ubyte.gz", dir, split);
  snprintf(labels, sizeof labels, "%s/%s-labels-idx1-ubyte.gz", dir, split);
  TRY(accel_dataset_from_idx(images, labels, kMean, kStd, &dataset));
  return dataset;
}

static accel_dataloader* make_loader(accel_dataset* dataset, int64_t batch_size, int shuffle, unsigned long long seed) {
  accel_dataloader_options opts;
  accel_dataloader* loader = NULL;
  accel_dataloader_options_init(&opts);
  opts.batch_size = batch_size;
  opts.shuffle = shuffle;
  opts.seed = seed;
  TRY(accel_dataloader_create(dataset, &opts, &loader));
  return loader;
}

/* One pass over the training shard; returns the mean loss of this process. */
static double train_one_epoch(accel_accelerator* acc, accel_model* model, accel_optimizer* optimizer,
                              accel_dataloader* loader, long max_steps, long* global_step) {
  double loss_sum = 0;
  long steps = 0;
  accel_tensor *inputs = NULL, *labels = NULL;
  TRY(accel_model_train(model, 1));
  for (;;) {
    accel_tensor *logits = NULL, *loss = NULL;
    double value = 0;
    TRY(accel_dataloader_next(loader, &inputs, &labels));
    if (inputs == NULL) break;
    if (max_steps > 0 && steps >= max_steps) { /* drain the epoch without training */
      accel_tensor_free(inputs);
      accel_tensor_free(labels);
      continue;
    }
    TRY(accel_optimizer_zero_grad(optimizer));
    TRY(accel_model_forward(model, inputs, &logits));
    TRY(accel_loss(ACCEL_LOSS_CROSS_ENTROPY, logits, labels, &loss));
    TRY(accel_accelerator_backward(acc, loss));
    TRY(accel_optimizer_step(optimizer));
    TRY(accel_tensor_item(loss, &value));
    loss_sum += value;
    ++steps;
    if (++*global_step % 100 == 0) {
      char line[64];
      snprintf(line, sizeof line, "step %ld: loss %.6f", *global_step, value);
      TRY(accel_accelerator_print(acc, line));
    }
    accel_tensor_free(loss);
    accel_tensor_free(logits);
    accel_tensor_free(inputs);
    accel_tensor_free(labels);
  }
  return steps > 0 ? loss_sum / (double)steps : 0.0;
}

/* Accuracy over the whole test set: predictions are gathered from every
   process (without the last round's repeated samples) and counted once. */
static double evaluate(accel_accelerator* acc, accel_model* model, accel_dataloader* loader) {
  double correct = 0, total = 0;
  accel_tensor *inputs = NULL, *labels = NULL;
  TRY(accel_model_train(model, 0));
  for (;;) {
    accel_tensor *logits = NULL, *predictions = NULL, *all_predictions = NULL, *all_labels = NULL;
    accel_tensor *hits = NULL, *hit_count = NULL;
    int64_t n = 0;
    double value = 0;
    TRY(accel_dataloader_next(loader, &inputs, &labels));
    if (inputs == NULL) break;
    TRY(accel_model_forward(model, inputs, &logits));
    TRY(accel_tensor_argmax(logits, 1, &predictions));
    TRY(accel_accelerator_gather_for_metrics(acc, predictions, &all_predictions));
    TRY(accel_accelerator_gather_for_metrics(acc, labels, &all_labels));
    TRY(accel_tensor_eq(all_predictions, all_labels, &hits));
    TRY(accel_tensor_sum(hits, &hit_count));
    TRY(accel_tensor_item(hit_count, &value));
    TRY(accel_tensor_numel(all_labels, &n));
    correct += value;
    total += (double)n;
    accel_tensor_free(hit_count);
    accel_tensor_free(hits);
    accel_tensor_free(all_labels);
    accel_tensor_free(all_predictions);
    accel_tensor_free(predictions);
    accel_tensor_free(logits);
    accel_tensor_free(inputs);
    accel_tensor_free(labels);
  }
  return total > 0 ? correct / total : 0.0;
}

int main(int argc, char** argv) {
  struct settings s = parse_args(argc, argv);
  accel_accelerator* acc = NULL;
  accel_model* model = NULL;
  accel_optimizer* optimizer = NULL;
  accel_optimizer_options optimizer_options;
  accel_dataset *train_set, *test_set;
  accel_dataloader *train_loader, *test_loader;
  char line[160];

  TRY(accel_accelerator_create(NULL, &acc));
  TRY(accel_accelerator_set_seed(acc, s.seed));

  require_data(s.data_dir);
  train_set = load_split(s.data_dir, "train");
  test_set = load_split(s.data_dir, "t10k");
  train_loader = make_loader(train_set, 64, 1, s.seed);
  test_loader = make_loader(test_set, 256, 0, s.seed);

  TRY(accel_model_from_json(kModelSpec, &model));
  accel_optimizer_options_init(&optimizer_options, ACCEL_OPTIM_ADAMW);
  optimizer_options.lr = 2e-3;
  TRY(accel_optimizer_create(model, &optimizer_options, &optimizer));

  TRY(accel_accelerator_prepare_model(acc, model));
  TRY(accel_accelerator_prepare_optimizer(acc, optimizer));
  TRY(accel_accelerator_prepare_dataloader(acc, train_loader));
  TRY(accel_accelerator_prepare_dataloader(acc, test_loader));

  long global_step = 0;
  for (int epoch = 1; epoch <= s.epochs; ++epoch) {
    double loss = train_one_epoch(acc, model, optimizer, train_loader, s.max_steps, &global_step);
    double accuracy = evaluate(acc, model, test_loader);
    /* Average the per-process mean losses so every process count prints the same kind of number. */
    accel_tensor *local = NULL, *mean = NULL;
    int64_t scalar_shape[1] = {1};
    TRY(accel_tensor_from_buffer(&loss, sizeof loss, ACCEL_FLOAT64, scalar_shape, 1, &local));
    TRY(accel_accelerator_reduce(acc, local, ACCEL_REDUCE_MEAN, &mean));
    TRY(accel_tensor_item(mean, &loss));
    snprintf(line, sizeof line, "epoch %d: loss %.4f, test accuracy %.2f%%", epoch, loss, accuracy * 100.0);
    TRY(accel_accelerator_print(acc, line));
    accel_tensor_free(mean);
    accel_tensor_free(local);
  }

  accel_dataloader_free(test_loader);
  accel_dataloader_free(train_loader);
  accel_dataset_free(test_set);
  accel_dataset_free(train_set);
  accel_optimizer_free(optimizer);
  accel_model_free(model);
  accel_accelerator_free(acc);
  return 0;
}
