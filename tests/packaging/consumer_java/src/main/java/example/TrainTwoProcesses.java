package example;

import java.util.List;
import java.util.Locale;
import org.libaccel.Accelerator;
import org.libaccel.Batch;
import org.libaccel.DType;
import org.libaccel.DataLoader;
import org.libaccel.DataLoaderOptions;
import org.libaccel.Field;
import org.libaccel.LossKind;
import org.libaccel.MapDataset;
import org.libaccel.Model;
import org.libaccel.Optimizer;
import org.libaccel.Tensor;

/**
 * Fits y = 3x - 1 with a Linear layer under `accel launch`; the main process prints
 * "final loss L on N processes" and every process checks that its weights are the main
 * process's (DDP kept them in sync).
 */
public final class TrainTwoProcesses {
  public static void main(String[] args) {
    List<Field> fields = List.of(Field.of(DType.FLOAT32, 1), Field.of(DType.FLOAT32, 1));
    MapDataset line = MapDataset.of(64, fields, (i, out) -> {
      float x = (i - 32) / 16f;
      out.set(0, x).set(1, 3 * x - 1);
    });
    try (Accelerator acc = new Accelerator();
         DataLoaderOptions options = new DataLoaderOptions()) {
      acc.setSeed(1);
      options.setBatchSize(8);
      options.setShuffle(true);
      try (DataLoader loader = DataLoader.of(line, options);
           Model model = Model.fromJson("[{\"type\": \"Linear\", \"in_features\": 1, \"out_features\": 1}]");
           Optimizer optimizer = Optimizer.sgd(model, 0.1, 0.0)) {
        acc.prepare(model, optimizer, loader);
        double last = 0;
        for (int epoch = 0; epoch < 20; ++epoch) {
          for (Batch batch : loader) {
            try (batch; Tensor prediction = model.forward(batch.inputs());
                 Tensor loss = prediction.loss(LossKind.LOSS_MSE, batch.targets())) {
              optimizer.zeroGrad();
              acc.backward(loss);
              optimizer.step();
              last = loss.item();
            }
          }
        }
        java.util.Map<String, Tensor> parameters = model.parameters();
        try (Tensor all = acc.gather(parameters.get("0.weight"))) {
          float[] w = all.toFloatArray();
          for (float v : w) {
            if (v != w[0]) throw new IllegalStateException("weights differ across processes: " + java.util.Arrays.toString(w));
          }
          if (Math.abs(w[0] - 3) > 0.05) throw new IllegalStateException("weight " + w[0] + " is not 3");
        } finally {
          for (Tensor t : parameters.values()) t.close();
        }
        acc.print(String.format(Locale.ROOT, "final loss %.6f on %d processes", last, acc.numProcesses()));
      }
    }
  }
}
