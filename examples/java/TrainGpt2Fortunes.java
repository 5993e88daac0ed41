/*
 * Fine-tune a Hugging Face GPT-2 (exported as TorchScript) on Debian's fortunes with libaccel from Java.
 *
 *   accel launch --nproc_per_node 2 java -Djava.library.path=build/java \
 *       -cp build/java/accel.jar:build/java/TrainGpt2Fortunes.jar TrainGpt2Fortunes MODEL_DIR/model.pt
 *
 * MODEL_DIR holds model.pt, a GPT2LMHeadModel traced through forward(input_ids, attention_mask, labels)
 * -> {"loss", "logits"} with a byte-level vocabulary of 256 (tests/hf/export_hf_models.py gpt2 MODEL_DIR
 * makes one), and its config.json.
 * Usage: TrainGpt2Fortunes [--data DIR] [--files a,b] [--epochs N] [--max-steps N] [--seed S] [--check] MODEL
 * Prints the lines examples/c/train_gpt_fortunes.c prints: "initial perplexity P", "step S: loss L" every 10
 * steps, "epoch E: loss L, perplexity P" (exact held-out perplexity over every process) and a greedy sample.
 */
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import org.libaccel.Accelerator;
import org.libaccel.Batch;
import org.libaccel.DataLoader;
import org.libaccel.DataLoaderOptions;
import org.libaccel.Dataset;
import org.libaccel.Model;
import org.libaccel.Optimizer;
import org.libaccel.ReduceOp;
import org.libaccel.Scheduler;
import org.libaccel.SchedulerKind;
import org.libaccel.SchedulerOptions;
import org.libaccel.Sequences;
import org.libaccel.Tensor;

public final class TrainGpt2Fortunes {
  private static final int BATCH = 8;
  private String data = "/usr/share/games/fortunes";
  private String files = "linux,disclaimer";
  private int epochs = 3;
  private long maxSteps = 0;  // training steps per epoch; 0: all
  private long seed = 42;
  private boolean check = false;
  private String modelPath;
  private int maxLength;

  public static void main(String[] args) throws IOException {
    new TrainGpt2Fortunes().parse(args).run();
  }

  private TrainGpt2Fortunes parse(String[] args) throws IOException {
    for (int i = 0; i < args.length; ++i) {
      String flag = args[i];
      if (flag.equals("--check")) {
        check = true;
        continue;
      }
      if (!flag.startsWith("--")) {
        if (modelPath != null) usage();
        modelPath = flag;
        continue;
      }
      if (i + 1 >= args.length) usage();
      switch (flag) {
        case "--data": data = args[++i]; break;
        case "--files": files = args[++i]; break;
        case "--epochs": epochs = Integer.parseInt(args[++i]); break;
        case "--max-steps": maxSteps = Long.parseLong(args[++i]); break;
        case "--seed": seed = Long.parseUnsignedLong(args[++i]); break;
        default: usage();
      }
    }
    if (modelPath == null) usage();
    for (String name : files.split(",")) {  // a first run often lacks the data: say where it comes from
      Path path = Paths.get(data, name);
      if (!Files.exists(path)) {
        System.err.println(path + " is not there: install the fortunes with `sudo apt install fortunes`"
            + " (Debian, Ubuntu) or pass --data DIR and --files NAMES");
        System.exit(1);
      }
    }
    String config = Files.readString(Paths.get(modelPath).toAbsolutePath().getParent().resolve("config.json"));
    Matcher positions = Pattern.compile("\"n_positions\"\\s*:\\s*(\\d+)").matcher(config);
    if (!positions.find()) throw new IOException("no n_positions in the model's config.json");
    maxLength = Integer.parseInt(positions.group(1));
    return this;
  }

  private static void usage() {
    System.err.println("usage: TrainGpt2Fortunes [--data DIR] [--files a,b] [--epochs N] [--max-steps N] [--seed S]"
        + " [--check] MODEL_DIR/model.pt");
    System.exit(2);
  }

  /** Fortunes (between lines holding only "%") as byte sequences of at most maxLength, longer ones cut into
      pieces so that no byte is dropped; every tenth fortune is held out. */
  private List<List<long[]>> loadFortunes() throws IOException {
    List<List<long[]>> parts = List.of(new ArrayList<>(), new ArrayList<>());
    int n = 0;
    for (String name : files.split(",")) {
      Path path = Paths.get(data, name);
      // ISO-8859-1 maps every byte to one char and back, so the split keeps the bytes as they are.
      String text = "\n" + new String(Files.readAllBytes(path), StandardCharsets.ISO_8859_1);
      for (String fortune : text.split("\n%\n", -1)) {
        byte[] bytes = fortune.replaceFirst("^\n", "").getBytes(StandardCharsets.ISO_8859_1);
        for (int start = 0; start < bytes.length; start += maxLength) {
          int end = Math.min(start + maxLength, bytes.length);
          if (end - start < 2) continue;  // one byte predicts nothing
          long[] ids = new long[end - start];
          for (int i = start; i < end; ++i) ids[i - start] = bytes[i] & 0xff;
          parts.get(n % 10 == 9 ? 1 : 0).add(ids);
        }
        ++n;
      }
    }
    return parts;
  }

  private DataLoader loader(List<long[]> ids, boolean shuffle) {
    try (Sequences seqs = Sequences.of(256, ids.toArray(new long[0][]));
         Dataset dataset = Dataset.fromSequences(seqs)) {  // the loader keeps both alive
      DataLoaderOptions options = new DataLoaderOptions();
      options.setBatchSize(BATCH);
      options.setShuffle(shuffle);
      options.setSeed(seed);
      return new DataLoader(dataset, options);
    }
  }

  private void run() throws IOException {
    List<List<long[]>> parts = loadFortunes();
    try (Accelerator acc = new Accelerator()) {
      acc.setSeed(seed);
      try (DataLoader trainLoader = loader(parts.get(0), true);
           DataLoader evalLoader = loader(parts.get(1), false);
           Model model = Model.fromTorchscript(modelPath);
           Optimizer optimizer = Optimizer.adamW(model, 3e-3)) {
        // Counted in unprepared batches: a prepared scheduler steps once per process per step.
        long steps = trainLoader.numBatches();
        if (maxSteps > 0) steps = Math.min(steps, maxSteps * acc.numProcesses());
        SchedulerOptions warmup = new SchedulerOptions(SchedulerKind.SCHED_LINEAR_WARMUP);
        warmup.setNumWarmupSteps(steps * epochs / 10);
        warmup.setNumTrainingSteps(steps * epochs);
        try (Scheduler scheduler = Scheduler.create(optimizer, warmup)) {
          acc.prepare(model, optimizer, scheduler, trainLoader, evalLoader);
          train(acc, model, optimizer, scheduler, trainLoader, evalLoader);
        }
      }
    }
  }

  private void train(Accelerator acc, Model model, Optimizer optimizer, Scheduler scheduler, DataLoader trainLoader,
                     DataLoader evalLoader) {
    double initial = perplexity(acc, model, evalLoader), last = initial;
    acc.print(String.format(Locale.ROOT, "initial perplexity %.3f", initial));
    List<String> names = trainLoader.fieldNames();
    long step = 0;
    for (int epoch = 1; epoch <= epochs; ++epoch) {
      double lossSum = 0;
      long steps = 0;
      for (Batch batch : trainLoader) {
        try (batch) {
          if (maxSteps > 0 && steps >= maxSteps) continue;  // drain the epoch without training
          Map<String, Tensor> out = model.forward(batch.asMap(names));
          try {
            Tensor loss = out.get("loss");
            acc.backward(loss);
            optimizer.step();
            scheduler.step();
            optimizer.zeroGrad();
            double value = loss.item();
            lossSum += value;
            ++steps;
            if (++step % 10 == 0) acc.print(String.format(Locale.ROOT, "step %d: loss %.4f", step, value));
          } finally {
            for (Tensor t : out.values()) t.close();
          }
        }
      }
      last = perplexity(acc, model, evalLoader);
      try (Tensor local = Tensor.of(new double[] {steps > 0 ? lossSum / steps : 0.0});
           Tensor mean = acc.reduce(local, ReduceOp.REDUCE_MEAN)) {
        acc.print(String.format(Locale.ROOT, "epoch %d: loss %.4f, perplexity %.3f", epoch, mean.item(), last));
      }
    }
    acc.print("sample: \"" + sample(model, "The ", 40) + "\"");
    if (check && !(last < initial)) {
      System.err.printf(Locale.ROOT, "the perplexity did not fall (%.3f -> %.3f)%n", initial, last);
      System.exit(1);
    }
  }

  /** Each sequence's summed next-token loss and number of predicted tokens, [B, 2] float64: position t predicts
      label t + 1, -100 is ignored. */
  private static Tensor sequenceLosses(Map<String, Tensor> batch, Map<String, Tensor> out) {
    Tensor logitsTensor = out.get("logits");
    long[] shape = logitsTensor.shape();
    float[] logits = logitsTensor.toFloatArray();
    long[] labels = batch.get("labels").toLongArray();
    int rows = (int) shape[0], length = (int) shape[1], vocab = (int) shape[2];
    double[] sums = new double[2 * rows];
    for (int b = 0; b < rows; ++b) {
      for (int t = 0; t + 1 < length; ++t) {
        long label = labels[b * length + t + 1];
        if (label == -100) continue;
        int row = (b * length + t) * vocab;
        double max = logits[row];
        for (int v = 1; v < vocab; ++v) max = Math.max(max, logits[row + v]);
        double total = 0;
        for (int v = 0; v < vocab; ++v) total += Math.exp(logits[row + v] - max);
        sums[2 * b] += max + Math.log(total) - logits[row + (int) label];
        sums[2 * b + 1] += 1;
      }
    }
    return Tensor.of(sums, rows, 2);
  }

  /** exp(summed token losses / tokens) over every process; gatherForMetrics drops the sequences repeated to fill
      the last round, so each counts once. */
  private static double perplexity(Accelerator acc, Model model, DataLoader loader) {
    model.eval();
    List<String> names = loader.fieldNames();
    double loss = 0, tokens = 0;
    for (Batch batch : loader) {
      try (batch) {
        Map<String, Tensor> fields = batch.asMap(names);
        Map<String, Tensor> out = model.forward(fields);
        try (Tensor local = sequenceLosses(fields, out); Tensor all = acc.gatherForMetrics(local)) {
          double[] values = all.toDoubleArray();
          for (int i = 0; i + 1 < values.length; i += 2) {
            loss += values[i];
            tokens += values[i + 1];
          }
        } finally {
          for (Tensor t : out.values()) t.close();
        }
      }
    }
    model.train();
    return Math.exp(loss / tokens);
  }

  /** Greedy decoding on the growing sequence. The trace needs labels, so they are the ids themselves and the
      loss is ignored. Non-printable bytes are escaped. */
  private String sample(Model model, String prompt, int newBytes) {
    model.eval();
    long[] ids = new long[Math.min(prompt.length() + newBytes, maxLength)];
    int length = 0;
    for (byte b : prompt.getBytes(StandardCharsets.ISO_8859_1)) ids[length++] = b & 0xff;
    for (; length < ids.length; ++length) {
      long[] ones = new long[length];
      Arrays.fill(ones, 1);
      try (Tensor x = Tensor.of(Arrays.copyOf(ids, length), 1, length); Tensor mask = Tensor.of(ones, 1, length)) {
        Map<String, Tensor> inputs = new LinkedHashMap<>();
        inputs.put("input_ids", x);
        inputs.put("attention_mask", mask);
        inputs.put("labels", x);
        Map<String, Tensor> out = model.forward(inputs);
        try (Tensor next = out.get("logits").argmax(-1)) {
          long[] best = next.toLongArray();
          ids[length] = best[length - 1];
        } finally {
          for (Tensor t : out.values()) t.close();
        }
      }
    }
    model.train();
    StringBuilder text = new StringBuilder();
    for (long id : ids) {
      if (id == '\n') text.append("\\n");
      else if (id == '"' || id == '\\') text.append('\\').append((char) id);
      else if (id >= 32 && id < 127) text.append((char) id);
      else text.append(String.format(Locale.ROOT, "\\x%02x", id));
    }
    return text.toString();
  }
}
