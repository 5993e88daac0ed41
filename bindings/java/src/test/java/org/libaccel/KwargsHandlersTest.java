package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Accelerate's configuration objects through the Java builders, on one process. */
class KwargsHandlersTest {
  static final String LINEAR = "[{\"type\": \"Linear\", \"in_features\": 64, \"out_features\": 4}]";

  /** ProfileKwargs' options: a bias-free Linear(3, 4) on [2, 3] runs aten::mm with 48 flops. */
  @Test
  void profileKwargsRecordShapesMemoryAndFlops(@TempDir Path dir) throws Exception {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model model = Model.fromJson("[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 4, \"bias\": false}]");
         Tensor x = Tensor.of(new float[] {1, 2, 3, 4, 5, 6}, 2, 3)) {
      ProfileKwargs kwargs = new ProfileKwargs().outputTraceDir(dir.toString()).recordShapes(true)
                                 .profileMemory(true).withFlops(true);
      try (Profile profile = acc.profile(kwargs); Tensor y = model.forward(x)) {
        assertArrayEquals(new long[] {2, 4}, y.shape());
      }
      String trace = Files.readString(dir.resolve("trace_0.json"));
      assertTrue(trace.contains("\"Input Dims\":[[2,3],[3,4]]"), trace);
      assertTrue(trace.contains("\"flops\":48"));
      assertTrue(trace.contains("\"[memory]\""));
      assertThrows(IllegalArgumentException.class, () -> acc.profile(new ProfileKwargs()));
    }
  }

  /**
   * withStack and withModules on tests/model/files/tiny_mlp.pt (fc1, relu, fc2): fc1's product
   * ran in submodule fc1, the relu in TinyMlp's own forward, each with its TorchScript source line.
   */
  @Test
  void profileKwargsWithStackAndModulesOnTorchScript(@TempDir Path dir) throws Exception {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model model = Model.fromTorchscript(NamedForwardTest.fixture("tiny_mlp.pt"));
         Tensor x = Tensor.of(new float[] {1, 2, 3, 4}, 1, 4)) {
      ProfileKwargs kwargs = new ProfileKwargs().outputTraceDir(dir.toString()).withStack(true).withModules(true);
      try (Profile profile = acc.profile(kwargs); Tensor y = model.forward(x)) {
        assertArrayEquals(new long[] {1, 3}, y.shape());
      }
      String trace = Files.readString(dir.resolve("trace_0.json"));
      assertTrue(trace.contains("\"Module Hierarchy\":\"TOP(TinyMlp)::forward.fc1(Linear)::forward.\""), trace);
      assertTrue(trace.contains("\"Module Hierarchy\":\"TOP(TinyMlp)::forward.\""), trace);
      assertTrue(trace.contains("\"Call stack\":\"code/__torch__.py("), trace);
    }
  }

  /** torch.profiler.schedule(wait 1, warmup 0, active 2, repeat 1): steps 1-2 recorded, ready after step 2. */
  @Test
  void profileScheduleCallsOnTraceReady(@TempDir Path dir) throws Exception {
    java.util.List<Long> ready = new java.util.ArrayList<>();
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model model = Model.fromJson("[{\"type\": \"Linear\", \"in_features\": 3, \"out_features\": 4, \"bias\": false}]")) {
      ProfileKwargs kwargs = new ProfileKwargs().outputTraceDir(dir.toString()).recordShapes(true)
                                 .schedule(1, 0, 2, 1, 0).onTraceReady(p -> ready.add(p.stepNum()));
      try (Profile profile = acc.profile(kwargs)) {
        for (int step = 0; step < 4; ++step) {
          try (Tensor x = Tensor.of(new float[3 * (step + 1)], step + 1, 3); Tensor y = model.forward(x)) {
            profile.step();
          }
        }
      }
      String trace = Files.readString(dir.resolve("trace_0.json"));
      assertTrue(trace.contains("\"Input Dims\":[[2,3],[3,4]]") && trace.contains("\"Input Dims\":[[3,3],[3,4]]"), trace);
      assertTrue(!trace.contains("\"Input Dims\":[[1,3],[3,4]]") && !trace.contains("\"Input Dims\":[[4,3],[3,4]]"));
    }
    assertEquals(java.util.List.of(3L), ready);
  }

  @Test
  void handlersReachTheAccelerator() {
    try (Accelerator acc = Accelerator.builder().cpu(true)
             .kwargsHandlers(new InitProcessGroupKwargs().backend("gloo").timeout(Duration.ofSeconds(800)),
                 new DistributedDataParallelKwargs().bucketCapMb(15).findUnusedParameters(true).commHook("bf16"),
                 new GradScalerKwargs().enabled(false))
             .build()) {
      assertEquals(800_000, acc.timeoutMs());
      assertFalse(acc.useDistributed() || acc.multiDevice()); // one process
    }
  }

  @Test
  void eachHandlerOnceAndRefusedValuesNamed() {
    IllegalArgumentException twice = assertThrows(IllegalArgumentException.class,
        () -> Accelerator.builder().kwargsHandlers(new GradScalerKwargs(), new GradScalerKwargs()));
    assertEquals("You can only pass one GradScalerKwargs in kwargsHandlers", twice.getMessage());
    assertTrue(assertThrows(IllegalArgumentException.class,
                   () -> new DistributedDataParallelKwargs().commHook("power_sgd"))
                   .getMessage().contains("no PowerSGD"));
    AccelException backend = assertThrows(AccelException.class,
        () -> Accelerator.builder().cpu(true).kwargsHandlers(new InitProcessGroupKwargs().backend("nccl")).build());
    assertTrue(backend.getMessage().contains("backend \"nccl\" needs CUDA devices"), backend.getMessage());
    AccelException rng =
        assertThrows(AccelException.class, () -> Accelerator.builder().cpu(true).rngTypes("torch", "dice").build());
    assertTrue(rng.getMessage().contains("\"dice\" is not one of torch, cuda, generator"), rng.getMessage());
  }

  static float[] forward(AcceleratorBuilder builder) {
    float[] input = new float[64];
    for (int i = 0; i < 64; ++i) input[i] = 0.37f * i - 11.1f;
    try (Accelerator acc = builder.build()) {
      acc.setSeed(3);
      try (Model model = Model.fromJson(LINEAR)) {
        acc.prepare(model);
        try (Tensor x = Tensor.of(input, 1, 64); Tensor out = model.forward(x)) {
          return out.toFloatArray();
        }
      }
    }
  }

  @Test
  void autocastKwargsTurnAutocastOff() {
    float[] fp32 = forward(Accelerator.builder().cpu(true).mixedPrecision("no"));
    float[] bf16 = forward(Accelerator.builder().cpu(true).mixedPrecision("bf16"));
    float[] off = forward(Accelerator.builder().cpu(true).mixedPrecision("bf16")
                              .kwargsHandlers(new AutocastKwargs().enabled(false)));
    // Off: float32 kernels, bit for bit; on: bfloat16 changes low bits (tests/capi/test_kwargs_api.c).
    assertArrayEquals(fp32, off);
    assertFalse(java.util.Arrays.equals(fp32, bf16));
  }

  @Test
  void dataloaderConfigurationAndSetters() {
    try (Accelerator acc = Accelerator.builder().cpu(true)
             .dataloaderConfig(new DataLoaderConfiguration().splitBatches(true).evenBatches(false).dataSeed(7)
                 .useSeedableSampler(true).nonBlocking(true).useStatefulDataloader(true))
             .gradientAccumulationSteps(2)
             .build();
         Model model = Model.fromJson(LINEAR)) {
      assertTrue(acc.splitBatches());
      assertFalse(acc.evenBatches());
      assertEquals(-1, acc.dispatchBatches());
      assertEquals(7, acc.dataSeed());
      assertTrue(acc.useSeedableSampler() && acc.nonBlocking() && acc.useStatefulDataloader());
      acc.setEvenBatches(true);
      assertTrue(acc.evenBatches());
      acc.prepare(model);
      StringBuilder seen = new StringBuilder();
      for (int i = 0; i < 4; ++i) {
        try (Scope s = acc.accumulate(model)) {
          seen.append(acc.syncGradients() ? '1' : '0');
        }
      }
      acc.setGradientAccumulationSteps(3);
      for (int i = 0; i < 5; ++i) {
        try (Scope s = acc.accumulate(model)) {
          seen.append(acc.syncGradients() ? '1' : '0');
        }
      }
      // Accelerate's _do_sync: the micro-step counter runs on across the change.
      assertEquals("010101001", seen.toString());
      try (Scope s = acc.accumulate(model)) {
        acc.setSyncGradients(true);
        assertTrue(acc.syncGradients());
      }
      assertThrows(AccelException.class, () -> acc.setGradientAccumulationSteps(0));
    }
  }

  @Test
  void projectConfiguration(@TempDir Path dir) throws Exception {
    try (Accelerator acc = Accelerator.builder().cpu(true)
             .projectConfig(new ProjectConfiguration().projectDir(dir.toString()).automaticCheckpointNaming(true)
                 .iteration(3))
             .build();
         Model model = Model.fromJson(LINEAR)) {
      acc.prepare(model);
      acc.saveState();
      assertTrue(Files.isDirectory(dir.resolve("checkpoints").resolve("checkpoint_3")));
      assertEquals(4, acc.saveIteration());
      assertEquals(dir.toString(), acc.projectDir());
    }
  }
}
