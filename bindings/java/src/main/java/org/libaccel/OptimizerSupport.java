package org.libaccel;

/** The Java side of the Optimizer and Scheduler factories that bindings/swig/accel_java.i declares. */
final class OptimizerSupport {
  private OptimizerSupport() {}

  static Optimizer adamW(Model model, double lr) {
    OptimizerOptions options = new OptimizerOptions(OptimizerKind.OPTIM_ADAMW);
    try {
      options.setLr(lr);
      return new Optimizer(model, options);
    } finally {
      options.delete();
    }
  }

  static Optimizer sgd(Model model, double lr, double momentum) {
    OptimizerOptions options = new OptimizerOptions(OptimizerKind.OPTIM_SGD);
    try {
      options.setLr(lr);
      options.setMomentum(momentum);
      return new Optimizer(model, options);
    } finally {
      options.delete();
    }
  }

  static Scheduler scheduler(Optimizer optimizer, SchedulerOptions options, long[] milestones) {
    Int64Vector list = new Int64Vector(milestones);
    try {
      return new Scheduler(optimizer, options, list);
    } finally {
      list.delete();
    }
  }
}
