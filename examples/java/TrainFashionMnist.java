/*
 * Train a small CNN on Fashion-MNIST with libaccel from Java.
 *
 * The same program runs on one process or many:
 *   java -Djava.library.path=build/java -cp build/java/accel.jar:build/java/TrainFashionMnist.jar TrainFashionMnist
 *   accel launch --nproc_per_node 2 java -Djava.library.path=... -cp ... TrainFashionMnist   # two, over Gloo
 *
 * Usage: TrainFashionMnist [--epochs N] [--max-steps N] [--seed S] [--data DIR]
 *          [--sharding-strategy S] [--checkpointing-steps N|epoch] [--output-dir DIR]
 *          [--resume-from-checkpoint DIR]
 * Prints the main process's loss every 100 steps and one line per epoch, the same
 * numbers as examples/c/train_fashion_mnist.c for the same seed.
 *
 * Checkpoints as in Accelerate's examples: --checkpointing-steps N saves the whole
 * training state (model, optimizer, data-loader position, generators) into
 * OUTPUT_DIR/step_N every N steps, "epoch" into OUTPUT_DIR/epoch_E after each
 * epoch (E from 0); --resume-from-checkpoint DIR continues from one, on any number
 * of processes and under any --sharding-strategy (NO_SHARD, SHARD_OPTIMIZER,
 * SHARD_GRAD_OP, FULL_SHARD, HYBRID_SHARD): the loader continues where the saved
 * run stood, and the step count from the directory's name.
 */
import java.nio.file.Files;
import java.nio.file.Paths;
import java.util.Locale;

import org.libaccel.Accelerator;
import org.libaccel.Batch;
import org.libaccel.DataLoader;
import org.libaccel.DataLoaderOptions;
import org.libaccel.Dataset;
import org.libaccel.Model;
import org.libaccel.Optimizer;
import org.libaccel.ReduceOp;
import org.libaccel.Tensor;

public final class TrainFashionMnist {
  private static final String MODEL = "["
      + "{\"type\": \"Conv2d\", \"in_channels\": 1, \"out_channels\": 16, \"kernel_size\": 3, \"padding\": 1},"
      + "{\"type\": \"ReLU\"},"
      + "{\"type\": \"MaxPool2d\", \"kernel_size\": 2},"
      + "{\"type\": \"Conv2d\", \"in_channels\": 16, \"out_channels\": 32, \"kernel_size\": 3, \"padding\": 1},"
      + "{\"type\": \"ReLU\"},"
      + "{\"type\": \"MaxPool2d\", \"kernel_size\": 2},"
      + "{\"type\": \"Flatten\"},"
      + "{\"type\": \"Linear\", \"in_features\": 1568, \"out_features\": 128},"
      + "{\"type\": \"ReLU\"},"
      + "{\"type\": \"Linear\", \"in_features\": 128, \"out_features\": 10}]";
  private static final double MEAN = 0.2860, STD = 0.3530;  // Fashion-MNIST training-set statistics

  private int epochs = 2;
  private long maxSteps = 0;  // training steps per epoch; 0: all
  private long seed = 42;
  private String data = "/usr/share/datasets/fashion-mnist";
  private String shardingStrategy;    // null: the launcher's environment or config decides
  private String checkpointingSteps;  // null: no checkpoints; "epoch" or a number of steps
  private String outputDir = ".";
  private String resumeFrom;

  public static void main(String[] args) {
    new TrainFashionMnist().parse(args).run();
  }

  private TrainFashionMnist parse(String[] args) {
    for (int i = 0; i < args.length; ++i) {
      String flag = args[i];
      if (i + 1 >= args.length) usage();
      switch (flag) {
        case "--epochs": epochs = Integer.parseInt(args[++i]); break;
        case "--max-steps": maxSteps = Long.parseLong(args[++i]); break;
        case "--seed": seed = Long.parseUnsignedLong(args[++i]); break;
        case "--data": data = args[++i]; break;
        case "--sharding-strategy": shardingStrategy = args[++i]; break;
        case "--checkpointing-steps": checkpointingSteps = args[++i]; break;
        case "--output-dir": outputDir = args[++i]; break;
        case "--resume-from-checkpoint": resumeFrom = args[++i]; break;
        default: usage();
      }
    }
    if (checkpointingSteps != null && !checkpointingSteps.equals("epoch")
        && !checkpointingSteps.matches("[1-9][0-9]{0,17}")) {
      System.err.println("--checkpointing-steps \"" + checkpointingSteps
          + "\" is neither a positive number of steps nor \"epoch\"");
      System.exit(2);
    }
    if (!Files.exists(Paths.get(data, "train-images-idx3-ubyte.gz"))) {
      System.err.println("Fashion-MNIST is not in " + data + ": install it with `sudo apt install dataset-fashion-mnist`"
          + " (Debian, Ubuntu) or pass --data DIR");
      System.exit(1);
    }
    return this;
  }

  private static void usage() {
    System.err.println("usage: TrainFashionMnist [--epochs N] [--max-steps N] [--seed S] [--data DIR]"
        + " [--sharding-strategy S] [--checkpointing-steps N|epoch] [--output-dir DIR] [--resume-from-checkpoint DIR]");
    System.exit(2);
  }

  private Dataset loadSplit(String split) {
    return Dataset.fromIdx(data + "/" + split + "-images-idx3-ubyte.gz", data + "/" + split + "-labels-idx1-ubyte.gz",
        MEAN, STD);
  }

  private DataLoader loader(Dataset dataset, long batchSize, boolean shuffle) {
    DataLoaderOptions options = new DataLoaderOptions();
    options.setBatchSize(batchSize);
    options.setShuffle(shuffle);
    options.setSeed(seed);
    return new DataLoader(dataset, options);
  }

  private void run() {
    try (Accelerator acc = shardingStrategy == null ? new Accelerator()
                                                    : Accelerator.builder().shardingStrategy(shardingStrategy).build()) {
      acc.setSeed(seed);  // before the model draws its initial weights
      train(acc);
    }
  }

  private void train(Accelerator acc) {
    try (Dataset trainSet = loadSplit("train");
         Dataset testSet = loadSplit("t10k");
         DataLoader trainLoader = loader(trainSet, 64, true);
         DataLoader testLoader = loader(testSet, 256, false);
         Model model = Model.fromJson(MODEL);
         Optimizer optimizer = Optimizer.adamW(model, 2e-3)) {
      acc.prepare(model, optimizer, trainLoader, testLoader);

      long step = 0, resumedSteps = 0;
      int firstEpoch = 1;
      if (resumeFrom != null) {
        acc.loadState(resumeFrom);
        // Accelerate's rule: step_N is N steps in (mid-epoch: the loader's position came back
        // with the state), epoch_E is after epoch E.
        String name = Paths.get(resumeFrom).getFileName().toString();
        if (name.startsWith("step_")) {
          step = Long.parseLong(name.substring(5));
          firstEpoch += (int) (step / trainLoader.numBatches());
          resumedSteps = step % trainLoader.numBatches();
        } else if (name.startsWith("epoch_")) {
          firstEpoch += Integer.parseInt(name.substring(6)) + 1;
        }
      }
      for (int epoch = firstEpoch; epoch <= epochs; ++epoch) {
        model.train();
        double lossSum = 0;
        long steps = epoch == firstEpoch ? resumedSteps : 0, trained = 0;
        for (Batch batch : trainLoader) {
          try (batch) {
            if (maxSteps > 0 && steps >= maxSteps) continue;  // drain the epoch without training, as the C example does
            optimizer.zeroGrad();
            try (Tensor logits = model.forward(batch.inputs()); Tensor loss = logits.crossEntropy(batch.targets())) {
              acc.backward(loss);
              optimizer.step();
              double value = loss.item();
              lossSum += value;
              ++steps;
              ++trained;
              if (++step % 100 == 0) acc.print(String.format(Locale.ROOT, "step %d: loss %.6f", step, value));
              if (checkpointingSteps != null && !checkpointingSteps.equals("epoch")
                  && step % Long.parseLong(checkpointingSteps) == 0) {
                acc.saveState(Paths.get(outputDir, "step_" + step).toString());
              }
            }
          }
        }

        model.eval();
        double correct = 0, total = 0;
        for (Batch batch : testLoader) {
          try (batch;
               Tensor logits = model.forward(batch.inputs());
               Tensor predictions = logits.argmax(1);
               Tensor allPredictions = acc.gatherForMetrics(predictions);
               Tensor allLabels = acc.gatherForMetrics(batch.targets());
               Tensor hits = allPredictions.eq(allLabels);
               Tensor hitCount = hits.sum()) {
            correct += hitCount.item();
            total += allLabels.numel();
          }
        }

        // Average the per-process mean losses so every process count prints the same kind of number.
        if ("epoch".equals(checkpointingSteps)) acc.saveState(Paths.get(outputDir, "epoch_" + (epoch - 1)).toString());
        try (Tensor local = Tensor.of(new double[] {trained > 0 ? lossSum / trained : 0.0});
             Tensor mean = acc.reduce(local, ReduceOp.REDUCE_MEAN)) {
          acc.print(String.format(Locale.ROOT, "epoch %d: loss %.4f, test accuracy %.2f%%", epoch, mean.item(),
              100.0 * correct / total));
        }
      }
    }
  }
}
