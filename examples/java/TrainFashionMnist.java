/*
 * Train a small CNN on Fashion-MNIST with libaccel from Java.
 *
 * The same program runs on one process or many:
 *   java -Djava.library.path=build/java -cp build/java/accel.jar:build/java/TrainFashionMnist.jar TrainFashionMnist
 *   accel launch --nproc_per_node 2 java -Djava.library.path=... -cp ... TrainFashionMnist   # two, over Gloo
 *
 * Usage: TrainFashionMnist [--epochs N] [--max-steps N] [--seed S] [--data DIR]
 * Prints the main process's loss every 100 steps and one line per epoch, the same
 * numbers as examples/c/train_fashion_mnist.c for the same seed.
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
        default: usage();
      }
    }
    if (!Files.exists(Paths.get(data, "train-images-idx3-ubyte.gz"))) {
      System.err.println("Fashion-MNIST is not in " + data + ": install it with `sudo apt install dataset-fashion-mnist`"
          + " (Debian, Ubuntu) or pass --data DIR");
      System.exit(1);
    }
    return this;
  }

  private static void usage() {
    System.err.println("usage: TrainFashionMnist [--epochs N] [--max-steps N] [--seed S] [--data DIR]");
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
    try (Accelerator acc = new Accelerator()) {
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

      long step = 0;
      for (int epoch = 1; epoch <= epochs; ++epoch) {
        model.train();
        double lossSum = 0;
        long steps = 0;
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
              if (++step % 100 == 0) acc.print(String.format(Locale.ROOT, "step %d: loss %.6f", step, value));
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
        try (Tensor local = Tensor.of(new double[] {steps > 0 ? lossSum / steps : 0.0});
             Tensor mean = acc.reduce(local, ReduceOp.REDUCE_MEAN)) {
          acc.print(String.format(Locale.ROOT, "epoch %d: loss %.4f, test accuracy %.2f%%", epoch, mean.item(),
              100.0 * correct / total));
        }
      }
    }
  }
}
