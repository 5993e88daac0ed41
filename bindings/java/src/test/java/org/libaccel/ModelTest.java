package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.Random;
import org.junit.jupiter.api.Test;

/** Models, optimizers, schedulers and the accelerator on one process. */
class ModelTest {
  static final String LINEAR = "[{\"type\": \"Linear\", \"in_features\": 4, \"out_features\": 3}]";

  @Test
  void forwardAndLoss() {
    try (Model model = Model.fromJson(LINEAR);
         Tensor x = Tensor.of(new float[8], 2, 4);
         Tensor logits = model.forward(x);
         Tensor y = Tensor.of(new long[] {0, 2});
         Tensor loss = logits.crossEntropy(y)) {
      assertEquals(15, model.numParameters());
      assertArrayEquals(new long[] {2, 3}, logits.shape());
      assertArrayEquals(new long[0], loss.shape());
      assertTrue(loss.item() > 0);
    }
  }

  @Test
  void badModelSpecNamesTheLayer() {
    AccelException e = assertThrows(AccelException.class, () -> Model.fromJson("[{\"type\": \"Linerar\"}]"));
    assertTrue(e.getMessage().contains("Linerar") || e.getMessage().contains("layer 0"), e.getMessage());
  }

  @Test
  void inputOfTheWrongShapeIsAnAccelException() {
    try (Model model = Model.fromJson(LINEAR); Tensor x = Tensor.of(new float[10], 2, 5)) {
      assertThrows(AccelException.class, () -> model.forward(x));
    }
  }

  @Test
  void trainingReducesTheLoss() {
    Random random = new Random(0);
    float[] xs = new float[64 * 4];
    long[] ys = new long[64];
    for (int i = 0; i < 64; ++i) {
      for (int j = 0; j < 4; ++j) xs[i * 4 + j] = (float) random.nextGaussian();
      ys[i] = xs[i * 4] > 0 ? 1 : 0;
    }
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model model = Model.fromJson(LINEAR);
         Optimizer opt = Optimizer.adamW(model, 0.05);
         Tensor x = Tensor.of(xs, 64, 4);
         Tensor y = Tensor.of(ys)) {
      acc.prepare(model, opt);
      double first = Double.NaN, last = Double.NaN;
      for (int step = 0; step < 30; ++step) {
        opt.zeroGrad();
        try (Tensor logits = model.forward(x); Tensor loss = logits.crossEntropy(y)) {
          acc.backward(loss);
          opt.step();
          last = loss.item();
          if (step == 0) first = last;
        }
      }
      assertTrue(last < first * 0.7, "loss went from " + first + " to " + last);
    }
  }

  @Test
  void optimizerOptionsAndLearningRate() {
    try (Model model = Model.fromJson(LINEAR)) {
      OptimizerOptions options = new OptimizerOptions(OptimizerKind.OPTIM_SGD);
      options.setLr(0.1);
      options.setMomentum(0.9);
      options.setNesterov(true);
      assertTrue(options.getNesterov());
      try (Optimizer opt = new Optimizer(model, options)) {
        assertEquals(0.1, opt.getLr(), 1e-12);
        opt.setLr(0.01);
        assertEquals(0.01, opt.getLr(), 1e-12);
      }
      options.setLr(-1);
      AccelException e = assertThrows(AccelException.class, () -> new Optimizer(model, options));
      assertTrue(e.getMessage().contains("lr"), e.getMessage());
    }
  }

  @Test
  void multiStepSchedulerFollowsPyTorch() {
    try (Model model = Model.fromJson(LINEAR);
         Optimizer opt = Optimizer.sgd(model, 1.0, 0.0)) {
      SchedulerOptions options = new SchedulerOptions(SchedulerKind.SCHED_MULTI_STEP);
      options.setGamma(0.5);
      try (Scheduler sched = Scheduler.create(opt, options, 2, 4)) {
        double[] lrs = new double[5];
        for (int i = 0; i < 5; ++i) {
          opt.step();
          sched.step();
          lrs[i] = sched.getLastLr();
        }
        assertArrayEquals(new double[] {1.0, 0.5, 0.5, 0.25, 0.25}, lrs, 1e-12);
        assertEquals(5, sched.lastEpoch());
      }
    }
  }

  @Test
  void closedObjectsThrowIllegalState() {
    Model model = Model.fromJson(LINEAR);
    model.close();
    model.close();
    assertEquals("Model is closed", assertThrows(IllegalStateException.class, model::numParameters).getMessage());
    Accelerator acc = Accelerator.builder().cpu(true).build();
    acc.close();
    assertEquals("Accelerator is closed", assertThrows(IllegalStateException.class, acc::numProcesses).getMessage());
  }

  @Test
  void optimizerKeepsItsModelAliveAfterTheModelIsClosed() {
    Model model = Model.fromJson(LINEAR);
    try (Optimizer opt = Optimizer.adamW(model, 1e-3)) {
      model.close();
      opt.zeroGrad();
      opt.step();
      assertEquals(1e-3, opt.getLr(), 1e-15);
    }
  }

  @Test
  void acceleratorPropertiesOnOneProcess() {
    try (Accelerator acc = Accelerator.builder().cpu(true).gradientAccumulationSteps(3).build()) {
      assertEquals(1, acc.numProcesses());
      assertEquals(0, acc.processIndex());
      assertTrue(acc.isMainProcess());
      assertEquals("cpu", acc.device());
      assertEquals(MixedPrecision.PRECISION_NO, acc.mixedPrecision());
      assertEquals(3, acc.gradientAccumulationSteps());
      assertEquals(DistributedType.DISTRIBUTED_NO, acc.distributedType());
    }
  }

  @Test
  void badAcceleratorOptionsAreRejected() {
    assertThrows(IllegalArgumentException.class, () -> Accelerator.builder().mixedPrecision("fp64"));
    AccelException e = assertThrows(AccelException.class,
        () -> Accelerator.builder().options(o -> o.setBucketCapMb(-1)).build());
    assertTrue(e.getMessage().contains("bucket_cap_mb"), e.getMessage());
  }

  @Test
  void shardingStrategyOption() {
    assertThrows(IllegalArgumentException.class, () -> Accelerator.builder().shardingStrategy("ZERO_9"));
    AccelException e = assertThrows(AccelException.class,
        () -> Accelerator.builder().cpu(true).shardingStrategy("HYBRID_SHARD").commHook(CommHook.COMM_HOOK_FP16).build());
    assertTrue(e.getMessage().contains("HYBRID_SHARD"), e.getMessage());
    try (Accelerator acc = Accelerator.builder().cpu(true).shardingStrategy("HYBRID_SHARD").build()) {
      assertEquals(ShardingStrategy.SHARDING_HYBRID_SHARD, acc.shardingStrategy());
    }
    try (Accelerator acc = Accelerator.builder().cpu(true).shardingStrategy("SHARD_GRAD_OP").build()) {
      assertEquals(ShardingStrategy.SHARDING_SHARD_GRAD_OP, acc.shardingStrategy());
    }
  }

  @Test
  void accumulateScopeSyncsEveryNthStep() {
    try (Accelerator acc = Accelerator.builder().cpu(true).gradientAccumulationSteps(2).build();
         Model model = Model.fromJson(LINEAR);
         Optimizer opt = Optimizer.sgd(model, 0.1, 0.0);
         Tensor x = Tensor.of(new float[8], 2, 4);
         Tensor y = Tensor.of(new long[] {0, 1})) {
      acc.prepare(model, opt);
      boolean[] synced = new boolean[4];
      for (int step = 0; step < 4; ++step) {
        try (Scope scope = acc.accumulate(model);
             Tensor logits = model.forward(x);
             Tensor loss = logits.crossEntropy(y)) {
          acc.backward(loss);
          synced[step] = acc.syncGradients();
          opt.step();
          opt.zeroGrad();
        }
      }
      assertArrayEquals(new boolean[] {false, true, false, true}, synced);
    }
  }

  /** Accelerate's accelerator.step and step_scheduler_with_optimizer. */
  @Test
  void accumulationStepCountsAndTheSchedulerFollowsStepSchedulerWithOptimizer() {
    assertEquals(2, schedulerStepsInFourMicroSteps(true));
    assertEquals(4, schedulerStepsInFourMicroSteps(false));
    assertTrue(Accel.cudaDeviceCount() >= 0);
  }

  private static long schedulerStepsInFourMicroSteps(boolean withOptimizer) {
    try (Accelerator acc = Accelerator.builder().cpu(true).gradientAccumulationSteps(2)
             .stepSchedulerWithOptimizer(withOptimizer).build();
         Model model = Model.fromJson(LINEAR);
         Optimizer opt = Optimizer.sgd(model, 1.0, 0.0)) {
      SchedulerOptions options = new SchedulerOptions(SchedulerKind.SCHED_EXPONENTIAL);
      options.setGamma(0.5);
      try (Scheduler sched = Scheduler.create(opt, options)) {
        acc.prepare(model, opt, sched);
        long[] counted = new long[4];
        for (int step = 0; step < 4; ++step) {
          try (Scope scope = acc.accumulate(model)) {
            counted[step] = acc.accumulationStep();
            opt.step();
            sched.step();
          }
        }
        assertArrayEquals(new long[] {1, 2, 3, 4}, counted);
        return sched.lastEpoch();
      }
    }
  }

  @Test
  void autocastAndMainProcessFirstScopesOpenAndClose() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build()) {
      try (Scope scope = acc.autocast()) {
        try (Scope first = acc.mainProcessFirst()) {
          assertTrue(acc.isMainProcess());
        }
      }
      try (Scope scope = acc.autocast()) {
        assertFalse(acc.checkTrigger());
      }
    }
  }

  @Test
  void loggerAndProgressBar() {
    Logger.get("java-test").info("hello from Java");
    try (ProgressBar bar = new ProgressBar(3, "steps")) {
      bar.update();
      bar.update(2);
    }
    AccelException e = assertThrows(AccelException.class, () -> new ProgressBar(-1));
    assertEquals(Status.ERR_INVALID_ARGUMENT, e.getStatus());
  }
}
