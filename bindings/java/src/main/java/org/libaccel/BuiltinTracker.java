package org.libaccel;

import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * A running built-in tracker as Accelerator.getTracker gives it (Accelerate's
 * TensorBoardTracker, WandBTracker, ...): log and logText write to this tracker alone. libaccel
 * writes the tracker's files itself; initTrackers starts it and endTraining finishes it.
 */
public final class BuiltinTracker implements Tracker {
  /** The built-in trackers' names, as log_with takes them (the core's list). */
  static final List<String> NAMES = List.of(Accel.builtinTrackerNames().split(","));

  private final Accelerator accelerator;
  private final String name;

  BuiltinTracker(Accelerator accelerator, String name) {
    this.accelerator = accelerator;
    this.name = name;
  }

  @Override
  public String name() {
    return name;
  }

  /** Throws UnsupportedOperationException: the configuration is given to initTrackers. */
  @Override
  public void start(String runName, Map<String, Object> config) {
    throw new UnsupportedOperationException("the " + name + " tracker is started by Accelerator.initTrackers");
  }

  @Override
  public void log(Map<String, Double> values, OptionalLong step) {
    accelerator.logTo(name, values, step.orElse(-1));
  }

  /** values at step (&lt; 0: no step). */
  public void log(Map<String, ? extends Number> values, long step) {
    accelerator.logTo(name, values, step);
  }

  /** A text value (trackers without text ignore it); step &lt; 0: no step. */
  public void logText(String tag, String text, long step) {
    accelerator.logTextTo(name, tag, text, step);
  }

  /** Throws UnsupportedOperationException: Accelerator.endTraining finishes the trackers. */
  @Override
  public void finish() {
    throw new UnsupportedOperationException("the " + name + " tracker is finished by Accelerator.endTraining");
  }
}
