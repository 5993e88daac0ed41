package org.libaccel;

import java.util.Map;
import java.util.OptionalLong;

/**
 * A custom experiment tracker (Accelerate's GeneralTracker), added with
 * Accelerator.addTracker and run on the main process. Override what you need; an exception
 * becomes an AccelException at the accelerator call that ran the tracker.
 */
public interface Tracker {
  /** The name Accelerator.hasTracker finds it by. */
  default String name() {
    return "custom";
  }

  /**
   * initTrackers: the project (run) name and the configuration given there, as a map (empty when
   * none; numbers read back as Long or Double, nested objects as maps, arrays as lists).
   */
  default void start(String runName, Map<String, Object> config) throws Exception {}

  default void log(Map<String, Double> values, OptionalLong step) throws Exception {}

  /** endTraining. */
  default void finish() throws Exception {}
}
