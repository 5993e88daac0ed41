package org.libaccel;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Objects;
import java.util.Random;

/**
 * The Java side of Accelerator's methods that bindings/swig/accel_java.i declares and delegates
 * here: seeding, state dicts, scopes, the Java adapters of checkpoint objects, hooks and
 * trackers, logging, and the object collectives (Java serialization between trusted peers).
 */
final class AcceleratorSupport {
  private AcceleratorSupport() {}

  /** Accelerator.random(): the generator setSeed reseeds. */
  static final Random RANDOM = new Random();

  static void setSeed(long seed, boolean deviceSpecific, boolean deterministic) {
    long effective = seed;
    if (deviceSpecific) {
      try (PartialState state = new PartialState()) {
        effective += state.processIndex();
      }
    }
    Accel.nativeSetSeed(effective, deterministic);
    RANDOM.setSeed(effective);
  }

  static void setSeed(Accelerator acc, long seed, boolean deviceSpecific, boolean deterministic) {
    long effective = deviceSpecific ? seed + acc.processIndex() : seed;
    acc.setSeedExt(seed, deviceSpecific, deterministic);
    RANDOM.setSeed(effective);
  }

  static LinkedHashMap<String, Tensor> getStateDict(Accelerator acc, Model model) {
    StringVector names = acc.stateDictNames(model);
    Batch batch = null;
    try {
      batch = acc.stateDictTensors(model);
      LinkedHashMap<String, Tensor> out = new LinkedHashMap<>();
      for (int i = 0; i < batch.size(); ++i) out.put(names.get(i), batch.take(i));
      return out;
    } finally {
      names.delete();
      if (batch != null) batch.delete();
    }
  }

  static ParallelismConfig parallelismConfig(Accelerator acc) {
    Int64Vector sizes = acc.nativeParallelismSizes();
    try {
      return new ParallelismConfig(sizes.get(0), sizes.get(1), sizes.get(2), sizes.get(3));
    } finally {
      sizes.delete();
    }
  }

  /** dimension: 0 dp_replicate, 1 dp_shard, 2 tp, 3 cp (the C call's order). */
  static long parallelismRank(Accelerator acc, int dimension) {
    Int64Vector ranks = acc.nativeParallelismRanks();
    try {
      return ranks.get(dimension);
    } finally {
      ranks.delete();
    }
  }

  static LinkedHashMap<String, Long> heldBytes(Accelerator acc, Model model, Optimizer optimizer) {
    Int64Vector held = acc.nativeHeldBytes(model, optimizer);
    try {
      LinkedHashMap<String, Long> out = new LinkedHashMap<>();
      out.put("parameters", held.get(0));
      out.put("gradients", held.get(1));
      out.put("optimizer_state", held.get(2));
      return out;
    } finally {
      held.delete();
    }
  }

  static long[] loadCheckpointInModel(Accelerator acc, Model model, String path, boolean strict) {
    Int64Vector counts = acc.nativeLoadCheckpointInModel(model, path, strict);
    try {
      long[] out = new long[counts.size()];
      for (int i = 0; i < out.length; ++i) out[i] = counts.get(i);
      return out;
    } finally {
      counts.delete();
    }
  }

  static void prepare(Accelerator acc, Object[] objects) {
    for (Object o : objects) {
      if (!(o instanceof Model || o instanceof Optimizer || o instanceof DataLoader || o instanceof Scheduler)) {
        throw new IllegalArgumentException("cannot prepare " + (o == null ? "null" : o.getClass().getName()));
      }
    }
    for (Object o : objects)
      if (o instanceof Model) acc.prepareModel((Model) o);
    for (Object o : objects)
      if (o instanceof Optimizer) acc.prepareOptimizer((Optimizer) o);
    for (Object o : objects)
      if (o instanceof DataLoader) acc.prepareDataloader((DataLoader) o);
    for (Object o : objects)
      if (o instanceof Scheduler) acc.prepareScheduler((Scheduler) o);
  }

  // ---- scopes: each begins now and ends when closed ----

  static Scope accumulate(Accelerator acc, Model model) {
    acc.accumulateBegin(model);
    return () -> acc.accumulateEnd(model);
  }

  static Scope noSync(Accelerator acc, Model model) {
    acc.noSyncBegin(model);
    return () -> acc.noSyncEnd(model);
  }

  static Scope autocast(Accelerator acc, boolean enabled) {
    acc.autocastBegin(enabled);
    return acc::autocastEnd;
  }

  static Scope noGrad(Accelerator acc) {
    acc.noGradBegin();
    return acc::noGradEnd;
  }

  static Scope mainProcessFirst(Accelerator acc) {
    acc.mainProcessFirstBegin();
    return acc::mainProcessFirstEnd;
  }

  static Scope localMainProcessFirst(Accelerator acc) {
    acc.localMainProcessFirstBegin();
    return acc::localMainProcessFirstEnd;
  }

  static Scope joinUnevenInputs(Accelerator acc) {
    acc.joinUnevenInputsBegin();
    return acc::joinUnevenInputsEnd;
  }

  // ---- Java objects the accelerator calls back: adapters it owns once registered ----

  static void registerForCheckpointing(Accelerator acc, Checkpointable[] objects) {
    for (Checkpointable o : objects) {
      Objects.requireNonNull(o, "checkpoint object");
      CheckpointObject adapter = new Callbacks.CheckpointAdapter(o);
      try {
        acc.registerForCheckpointing(adapter);
      } catch (RuntimeException e) {
        adapter.delete();
        throw e;
      }
      adapter.swigReleaseOwnership(); // the accelerator deletes it
    }
  }

  static RemovableHandle registerSaveStatePreHook(Accelerator acc, DirectoryHook hook) {
    StateHook adapter = new Callbacks.HookAdapter(hook);
    long id;
    try {
      id = acc.registerSaveStatePreHook(adapter);
    } catch (RuntimeException e) {
      adapter.delete();
      throw e;
    }
    adapter.swigReleaseOwnership();
    return new RemovableHandle(acc, id);
  }

  static RemovableHandle registerLoadStatePreHook(Accelerator acc, DirectoryHook hook) {
    StateHook adapter = new Callbacks.HookAdapter(hook);
    long id;
    try {
      id = acc.registerLoadStatePreHook(adapter);
    } catch (RuntimeException e) {
      adapter.delete();
      throw e;
    }
    adapter.swigReleaseOwnership();
    return new RemovableHandle(acc, id);
  }

  static void addTracker(Accelerator acc, Tracker tracker) {
    Callbacks.TrackerAdapter adapter = new Callbacks.TrackerAdapter(tracker);
    try {
      acc.addTracker(adapter, tracker.name());
    } catch (RuntimeException e) {
      adapter.delete();
      throw e;
    }
    // The accelerator owns it from now on and deletes it after its last call (end of
    // training, then free); until then the native side holds the adapter strongly.
    adapter.swigReleaseOwnership();
  }

  /** To every running tracker when tracker is null, else to the one called tracker. */
  static void log(Accelerator acc, String tracker, Map<String, ? extends Number> values, long step) {
    StringVector names = new StringVector();
    DoubleVector numbers = new DoubleVector();
    try {
      for (Map.Entry<String, ? extends Number> e : values.entrySet()) {
        names.add(e.getKey());
        numbers.add(e.getValue().doubleValue());
      }
      if (tracker == null) {
        acc.log(names, numbers, step);
      } else {
        acc.logTo(tracker, names, numbers, step);
      }
    } finally {
      names.delete();
      numbers.delete();
    }
  }

  static void save(Accelerator acc, Map<String, Tensor> tensors, String path) {
    NamedTensors named = new NamedTensors();
    try {
      for (Map.Entry<String, Tensor> e : tensors.entrySet()) {
        named.add(e.getKey(), e.getValue());
      }
      acc.saveTensors(named, path);
    } finally {
      named.delete();
    }
  }

  // ---- collectives on Java values ----

  static List<String> gatherObjects(Accelerator acc, String data) {
    StringVector all = acc.gatherObject(data);
    try {
      return new ArrayList<>(all);
    } finally {
      all.delete();
    }
  }

  static <K, T> Map<K, List<T>> splitBetweenProcesses(
      Accelerator acc, Map<K, ? extends List<T>> inputs, boolean applyPadding) {
    int size = -1;
    for (Map.Entry<K, ? extends List<T>> e : inputs.entrySet()) {
      if (size >= 0 && e.getValue().size() != size) {
        throw new AccelException(Status.ERR_INVALID_ARGUMENT.swigValue(),
            "splitBetweenProcesses: all lists must have "
                + "the same size; " + e.getKey() + " has " + e.getValue().size() + ", another " + size);
      }
      size = e.getValue().size();
    }
    Map<K, List<T>> out = new LinkedHashMap<>();
    if (size < 0) return out;
    long[] range = Nested.range(acc, size, applyPadding);
    for (Map.Entry<K, ? extends List<T>> e : inputs.entrySet()) out.put(e.getKey(), Nested.split(e.getValue(), range));
    return out;
  }

  static <T extends Serializable> List<T> gatherForMetricsObjects(Accelerator acc, List<T> items) {
    List<String> parts = gatherObjects(acc, Nested.encode(new ArrayList<>(items)));
    List<T> all = new ArrayList<>();
    for (int rank = 0; rank < parts.size(); ++rank) all.addAll(Nested.<T>decodeList(parts.get(rank), rank));
    return new ArrayList<>(all.subList(0, (int) acc.metricsLength(all.size())));
  }

  static <T extends Serializable> List<T> broadcastObjectList(Accelerator acc, List<T> list, int fromProcess) {
    String data = acc.processIndex() == fromProcess ? Nested.encode(new ArrayList<>(list)) : "";
    List<T> received = Nested.decodeList(acc.broadcastObject(data, fromProcess), fromProcess);
    list.clear();
    list.addAll(received);
    return list;
  }
}
