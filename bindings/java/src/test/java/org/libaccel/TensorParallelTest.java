package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.Map;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Test;

/**
 * Accelerate's ParallelismConfig from Java (docs/parallelism.md): the mesh checked against the
 * world on one process, and a tensor-parallel step across processes when CTest runs this class under
 * `accel launch --nproc_per_node 2` (java_tensor_parallel_2).
 */
class TensorParallelTest {
  static final String BLOCK = "\"type\": \"TransformerEncoderLayer\", \"d_model\": 16, \"nhead\": 2, "
      + "\"dim_feedforward\": 32, \"dropout\": 0.0, \"activation\": \"gelu\", \"batch_first\": true, "
      + "\"norm_first\": true, \"causal\": true";
  static final String GPT = "{\"inputs\": [\"input_ids\", {\"name\": \"labels\", \"optional\": true}], \"nodes\": ["
      + "{\"name\": \"wte\", \"type\": \"Embedding\", \"num_embeddings\": 32, \"embedding_dim\": 16},"
      + "{\"name\": \"wpe\", \"type\": \"PositionalEmbedding\", \"num_positions\": 8, \"embedding_dim\": 16,"
      + " \"batch_first\": true},"
      + "{\"name\": \"h0\", " + BLOCK + "}, {\"name\": \"h1\", " + BLOCK + "},"
      + "{\"name\": \"ln_f\", \"type\": \"LayerNorm\", \"normalized_shape\": 16},"
      + "{\"name\": \"logits\", \"type\": \"Linear\", \"in_features\": 16, \"out_features\": 32,"
      + " \"weight\": \"wte.weight\"},"
      + "{\"name\": \"loss\", \"type\": \"CausalLMLoss\", \"input\": [\"logits\", \"labels\"]}],"
      + " \"outputs\": [\"loss\"]}";
  /** Megatron-style sequence parallelism on top (docs/parallelism.md): norms and ln_f on sequence blocks. */
  static final String SEQUENCE_PLAN = ", \"tp_plan\": {\"*.self_attn\": \"colwise\", \"*.self_attn.out_proj\": "
      + "\"rowwise\", \"*.linear1\": \"colwise\", \"*.linear2\": \"rowwise\", \"*.norm1\": \"sequence_parallel\", "
      + "\"*.norm2\": \"sequence_parallel\", \"ln_f\": \"sequence_parallel\"}}";

  @Test
  void theMeshIsCheckedAgainstTheWorld() {
    Assumptions.assumeTrue(System.getenv("WORLD_SIZE") == null, "one process only");
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).build()) {
      assertEquals(new ParallelismConfig(), acc.parallelismConfig());
      assertEquals(0, acc.dataParallelRank() + acc.dataParallelShardRank() + acc.tensorParallelRank()
          + acc.contextParallelRank());
    }
    AccelException e = assertThrows(AccelException.class,
        () -> new AcceleratorBuilder().cpu(true).parallelismConfig(new ParallelismConfig().tpSize(2)).build());
    assertTrue(e.getMessage().contains("the world has 1 processes"), e.getMessage());
  }

  @Test
  void aSplitStepAcrossLaunchedProcesses() {
    Assumptions.assumeTrue("2".equals(System.getenv("WORLD_SIZE")), "run by java_tensor_parallel_2");
    // java_sequence_parallel_2 sets ACCEL_JAVA_TP_MODE=sp: the same step with sequence parallelism;
    // java_context_parallel_2 sets cp: the sequence cut over the two ranks instead of the layers.
    boolean sequenceParallel = "sp".equals(System.getenv("ACCEL_JAVA_TP_MODE"));
    boolean contextParallel = "cp".equals(System.getenv("ACCEL_JAVA_TP_MODE"));
    ParallelismConfig mesh = contextParallel ? new ParallelismConfig().cpSize(2) : new ParallelismConfig().tpSize(2);
    String spec = sequenceParallel ? GPT.substring(0, GPT.length() - 1) + SEQUENCE_PLAN : GPT;
    long[] ids = new long[32];
    for (int i = 0; i < ids.length; ++i) ids[i] = (i * 7 + 3) % 32;
    try (Accelerator acc = new AcceleratorBuilder().cpu(true).parallelismConfig(mesh).build();
         Model model = Model.fromJson(spec); Model reference = Model.fromJson(spec);
         Optimizer opt = Optimizer.adamW(model, 1e-3); Tensor batch = Tensor.of(ids, 4, 8)) {
      assertEquals(mesh, acc.parallelismConfig());
      // Two ranks along tp or cp: this process's index is its rank along that dimension.
      assertEquals(contextParallel ? 0 : acc.processIndex(), acc.tensorParallelRank());
      assertEquals(contextParallel ? acc.processIndex() : 0, acc.contextParallelRank());
      assertEquals(0, acc.dataParallelRank() + acc.dataParallelShardRank());
      acc.setSeed(0);
      acc.prepare(model, opt);
      LinkedHashMap<String, Tensor> params = model.parameters();
      assertArrayEquals(new long[] {32 / mesh.tpSize(), 16}, params.get("h0.linear1.weight").shape());
      for (Tensor t : params.values()) t.close();
      Map<String, Tensor> inputs = Map.of("input_ids", batch, "labels", batch);
      LinkedHashMap<String, Tensor> out = model.forward(inputs);
      acc.backward(out.get("loss"));
      opt.step();
      opt.zeroGrad();
      for (Tensor t : out.values()) t.close();
      LinkedHashMap<String, Tensor> whole = acc.getStateDict(model); // collective: every rank gathers
      assertArrayEquals(new long[] {32, 16}, whole.get("h0.linear1.weight").shape());
      reference.loadStateDict(whole, true);
      for (Tensor t : whole.values()) t.close();
      double split = lossOf(model, inputs), full = lossOf(reference, inputs);
      // The same function with sums reassociated: the mean of 28 token losses of about 3.5 moves by
      // at most 28 * 6e-8 * 3.5 = 5.9e-6 (float32's unit roundoff); the products inside, less again.
      assertEquals(full, split, 1e-5);
      if (sequenceParallel) {
        // The blocks are real: a sequence of 7 does not split over 2 ranks, and h0 says so
        // (plain tensor parallelism takes it).
        try (Tensor odd = Tensor.of(java.util.Arrays.copyOf(ids, 28), 4, 7)) {
          AccelException e = assertThrows(AccelException.class,
              () -> lossOf(model, Map.of("input_ids", odd, "labels", odd)));
          assertTrue(e.getMessage().contains("h0"), e.getMessage());
        }
      }
      if (contextParallel) {
        // The blocks are real: each rank reads its block of the sequence only (chunks r and 3 - r of
        // 4 chunks of 2), so ids changed elsewhere leave its result the whole model's.
        long[] mine = ids.clone();
        for (int i = 0; i < mine.length; ++i) {
          long chunk = (i % 8) / 2;
          if (chunk != acc.processIndex() && chunk != 3 - acc.processIndex()) mine[i] = (ids[i] + 1) % 32;
        }
        try (Tensor changed = Tensor.of(mine, 4, 8)) {
          assertEquals(full, lossOf(model, Map.of("input_ids", changed, "labels", batch)), 1e-5);
        }
      }
      if (acc.processIndex() == 0) {
        System.out.println(sequenceParallel ? "ok sp 2" : contextParallel ? "ok cp 2" : "ok tp 2");
      }
    }
  }

  static double lossOf(Model model, Map<String, Tensor> inputs) {
    LinkedHashMap<String, Tensor> out = model.forward(inputs);
    try {
      return out.get("loss").item();
    } finally {
      for (Tensor t : out.values()) t.close();
    }
  }
}
