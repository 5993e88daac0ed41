/*
 * hf_train.c in Java, through the binding's Map forward:
 *
 *   java ... HfTrain DATA_DIR OUT_DIR STEPS
 *
 * run on every process of `accel launch` by check_hf_roundtrip.py; the same
 * batches, checks and outputs (OUT_DIR/saved, logits.bin, losses.txt).
 */
import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.LongBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.libaccel.Accelerator;
import org.libaccel.Model;
import org.libaccel.Optimizer;
import org.libaccel.Tensor;

public final class HfTrain {
  /** data.json's tensors: name -> shape, and name -> row-major int64 values. */
  private final Map<String, long[]> shapes = new LinkedHashMap<>();
  private final Map<String, long[]> values = new LinkedHashMap<>();
  private final long rows;

  private HfTrain(Path dir) throws IOException {
    // data.json is {"name": [d0, d1, ...], ...}: flat enough for a regex, so no JSON library.
    Matcher m = Pattern.compile("\"(\\w+)\"\\s*:\\s*\\[([0-9,\\s]*)\\]").matcher(Files.readString(dir.resolve("data.json")));
    while (m.find()) {
      long[] shape = Arrays.stream(m.group(2).split(",")).map(String::trim).mapToLong(Long::parseLong).toArray();
      LongBuffer buffer = ByteBuffer.wrap(Files.readAllBytes(dir.resolve(m.group(1) + ".bin")))
          .order(ByteOrder.LITTLE_ENDIAN).asLongBuffer();
      long[] data = new long[buffer.remaining()];
      buffer.get(data);
      shapes.put(m.group(1), shape);
      values.put(m.group(1), data);
    }
    rows = shapes.get("input_ids")[0];
  }

  /** count rows from first (wrapping), as new tensors the caller closes. */
  private Map<String, Tensor> batch(long first, long count) {
    Map<String, Tensor> out = new LinkedHashMap<>();
    for (String name : shapes.keySet()) {
      long[] shape = shapes.get(name).clone();
      long[] data = values.get(name);
      int width = (int) (data.length / rows);
      long[] picked = new long[(int) count * width];
      for (int r = 0; r < count; ++r) {
        System.arraycopy(data, (int) ((first + r) % rows) * width, picked, r * width, width);
      }
      shape[0] = count;
      out.put(name, Tensor.of(picked, shape));
    }
    return out;
  }

  private static void closeAll(Map<String, Tensor> tensors) {
    for (Tensor t : tensors.values()) t.close();
  }

  /** The eval-mode loss over every row; logits[0] receives the logits. */
  private double evalLoss(Model model, float[][] logits) {
    Map<String, Tensor> inputs = batch(0, rows);
    model.eval();
    Map<String, Tensor> out = model.forward(inputs);
    model.train();
    try {
      logits[0] = out.get("logits").toFloatArray();
      return out.get("loss").item();
    } finally {
      closeAll(out);
      closeAll(inputs);
    }
  }

  public static void main(String[] args) throws IOException {
    if (args.length != 3) {
      System.err.println("usage: HfTrain DATA_DIR OUT_DIR STEPS");
      System.exit(2);
    }
    Path dataDir = Path.of(args[0]), outDir = Path.of(args[1]);
    int steps = Integer.parseInt(args[2]);
    HfTrain data = new HfTrain(dataDir);
    float[][] logits = new float[1][];
    boolean failed;
    try (Accelerator acc = Accelerator.builder().cpu(true).projectDir(outDir.toString()).build();
         Model model = Model.fromTorchscript(dataDir.resolve("model.pt").toString());
         Optimizer opt = Optimizer.adamW(model, 3e-3)) {
      acc.prepare(model, opt);
      int rank = acc.processIndex(), world = acc.numProcesses();
      double first = data.evalLoss(model, logits);
      for (int step = 0; step < steps; ++step) {
        Map<String, Tensor> inputs = data.batch(2L * (step * world + rank), 2);
        Map<String, Tensor> out = model.forward(inputs);
        acc.backward(out.get("loss"));
        opt.step();
        opt.zeroGrad();
        closeAll(out);
        closeAll(inputs);
      }
      double last = data.evalLoss(model, logits);

      // Replicas: every process's checksum of get_state_dict (whole tensors under FULL_SHARD
      // too, gathered collectively there), gathered, must be identical.
      double checksum = 0;
      Map<String, Tensor> state = acc.getStateDict(model);
      for (Tensor t : state.values()) {
        for (float v : t.toFloatArray()) checksum += v;
      }
      closeAll(state);
      double[] everyone;
      try (Tensor local = Tensor.of(new double[] {checksum}, 1); Tensor all = acc.gather(local)) {
        everyone = all.toDoubleArray();
      }
      Map<String, Long> held = acc.heldBytes(model, opt);
      System.out.printf(Locale.ROOT,
          "rank %d: eval loss %.5f -> %.5f, parameter checksum %.9g; sharding strategy %d holds %d + %d + %d bytes;"
              + " cpu offload %d%n",
          rank, first, last, checksum, acc.shardingStrategy().swigValue(), held.get("parameters"),
          held.get("gradients"), held.get("optimizer_state"), acc.cpuOffload() ? 1 : 0);

      acc.saveModel(model, outDir.resolve("saved").toString(), "10GB", true);
      if (rank == 0) {
        ByteBuffer bytes = ByteBuffer.allocate(4 * logits[0].length).order(ByteOrder.LITTLE_ENDIAN);
        bytes.asFloatBuffer().put(logits[0]);
        Files.write(outDir.resolve("logits.bin"), bytes.array());
        Files.writeString(outDir.resolve("losses.txt"), String.format(Locale.ROOT, "%.6f %.6f%n", first, last));
      }
      failed = !(last < first * 0.8) || Arrays.stream(everyone).anyMatch(c -> c != everyone[0]);
      if (failed) {
        System.err.printf(Locale.ROOT, "rank %d: the loss did not fall by 20%% (%.5f -> %.5f) or the replicas differ: %s%n",
            rank, first, last, Arrays.toString(everyone));
      }
    }
    System.exit(failed ? 1 : 0);
  }
}
