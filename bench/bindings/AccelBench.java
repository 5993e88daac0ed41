/*
 * Contestant (e): libaccel from Java, the loop of accel_bench.cpp through the Java
 * binding. bench/run.sh starts it in source-file mode (no build step):
 *   OMP_NUM_THREADS=2 java -Djava.library.path=build/java -cp build/java/accel.jar \
 *       bench/bindings/AccelBench.java --workload-dir bench/workloads --workload tiny --steps 600
 */
import java.io.IOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Locale;
import java.util.Map;
import java.util.Random;
import org.libaccel.Accelerator;
import org.libaccel.Model;
import org.libaccel.Optimizer;
import org.libaccel.Profile;
import org.libaccel.Tensor;

public final class AccelBench {
  private static final Map<String, long[]> SAMPLE_SHAPE = Map.of(
      "tiny", new long[] {32, 784}, "mlp", new long[] {64, 784},
      "cnn", new long[] {32, 1, 28, 28}, "sync", new long[] {8, 4096});
  private static final int BATCHES = 4;

  public static void main(String[] args) throws IOException {
    String workload = "tiny";
    long steps = 100;
    long warmup = 5;
    Path workloads = Path.of("bench/workloads");
    String traceDir = null;  // set: profile traceSteps more steps into it (bench/crossing.py)
    long traceSteps = 50;
    for (int i = 0; i + 1 < args.length; i += 2) {
      switch (args[i]) {
        case "--workload": workload = args[i + 1]; break;
        case "--steps": steps = Long.parseLong(args[i + 1]); break;
        case "--warmup": warmup = Long.parseLong(args[i + 1]); break;
        case "--workload-dir": workloads = Path.of(args[i + 1]); break;
        case "--threads": break;  // set through OMP_NUM_THREADS
        case "--trace-dir": traceDir = args[i + 1]; break;
        case "--trace-steps": traceSteps = Long.parseLong(args[i + 1]); break;
        default: throw new IllegalArgumentException("unknown argument " + args[i]);
      }
    }
    long[] shape = SAMPLE_SHAPE.get(workload);
    if (shape == null) throw new IllegalArgumentException("unknown workload " + workload);
    String spec = Files.readString(workloads.resolve(workload + ".json"));

    try (Accelerator acc = new Accelerator();
         Model model = Model.fromJson(spec);
         Optimizer optimizer = Optimizer.adamW(model, 1e-3)) {
      acc.prepare(model, optimizer);
      int rank = acc.processIndex();
      int world = acc.numProcesses();
      Random random = new Random(1234 + rank);
      int sample = 1;
      for (int d = 1; d < shape.length; ++d) sample *= (int) shape[d];
      Tensor[] xs = new Tensor[BATCHES];
      Tensor[] ys = new Tensor[BATCHES];
      for (int b = 0; b < BATCHES; ++b) {
        float[] x = new float[(int) shape[0] * sample];
        for (int k = 0; k < x.length; ++k) x[k] = (float) random.nextGaussian();
        long[] y = new long[(int) shape[0]];
        for (int k = 0; k < y.length; ++k) y[k] = random.nextInt(10);
        xs[b] = Tensor.of(x, shape);
        ys[b] = Tensor.of(y, shape[0]);
      }

      long start = 0;
      for (long step = -warmup; step < steps; ++step) {
        if (step == 0) {
          acc.waitForEveryone();
          start = System.nanoTime();
        }
        int b = (int) ((step + warmup) % BATCHES);
        trainStep(acc, model, optimizer, xs[b], ys[b]);
      }
      double seconds = (System.nanoTime() - start) * 1e-9;
      if (traceDir != null) {  // after the timed steps: the profiler slows what it records
        try (Profile profile = acc.profile(traceDir)) {
          for (int step = 0; step < traceSteps; ++step) {
            trainStep(acc, model, optimizer, xs[step % BATCHES], ys[step % BATCHES]);
          }
        }
      }
      double rate = steps / seconds;
      System.out.printf(Locale.ROOT,
          "BENCH_RESULT {\"contestant\":\"accel_java\",\"workload\":\"%s\",\"rank\":%d,\"nproc\":%d,\"threads\":%s,"
              + "\"steps\":%d,\"seconds\":%.4f,\"steps_per_s\":%.3f,\"samples_per_s\":%.1f,\"peak_rss_mb\":%.1f}%n",
          workload, rank, world, System.getenv().getOrDefault("OMP_NUM_THREADS", "0"), steps, seconds, rate,
          rate * shape[0] * world, peakRssMb());
      for (int b = 0; b < BATCHES; ++b) {
        xs[b].close();
        ys[b].close();
      }
    }
  }

  private static void trainStep(Accelerator acc, Model model, Optimizer optimizer, Tensor x, Tensor y) {
    optimizer.zeroGrad();
    try (Tensor logits = model.forward(x); Tensor loss = logits.crossEntropy(y)) {
      acc.backward(loss);
    }
    optimizer.step();
  }

  /** VmHWM of this process (the JVM's heap and libaccel's memory together). */
  private static double peakRssMb() throws IOException {
    for (String line : Files.readAllLines(Path.of("/proc/self/status"))) {
      if (line.startsWith("VmHWM:")) return Long.parseLong(line.replaceAll("[^0-9]", "")) / 1024.0;
    }
    return 0;
  }
}
