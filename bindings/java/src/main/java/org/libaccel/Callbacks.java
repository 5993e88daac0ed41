package org.libaccel;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.OptionalLong;

/**
 * The directors that carry the Java interfaces (MapDataset, IterableDataset, Checkpointable,
 * DirectoryHook, Tracker) to the native side. A callback never lets a Java exception reach
 * native code: it returns the exception's text, and libaccel reports it as the failing call's
 * error, so the caller sees an AccelException naming it.
 */
final class Callbacks {
  private Callbacks() {}

  static String describe(Throwable error) {
    if (error instanceof AccelException) return error.getMessage();
    String message = error.getMessage();
    return error.getClass().getName() + (message == null ? "" : ": " + message);
  }

  /** A callback's body: whatever it throws becomes the callback's error text. */
  @FunctionalInterface
  interface Body {
    void run() throws Throwable;
  }

  /** Runs body and returns "" when it completes, else the text of what it threw. */
  static String guarded(Body body) {
    try {
      body.run();
      return "";
    } catch (Throwable error) {
      return describe(error);
    }
  }

  static Dataset fromMap(MapDataset dataset) {
    List<Field> fields = List.copyOf(dataset.fields());
    long size = dataset.size();
    MapSource source = new MapSource(dataset, fields);
    FieldSpecVector specs = Field.toSpecs(fields);
    Dataset result;
    try {
      result = Dataset.fromSource(source, size, specs);
    } catch (RuntimeException e) {
      source.delete();
      throw e;
    } finally {
      specs.delete();
    }
    source.swigReleaseOwnership();  // the dataset deletes it when it and its loaders are gone
    return result;
  }

  static Dataset fromIterable(IterableDataset dataset) {
    List<Field> fields = List.copyOf(dataset.fields());
    StreamAdapter source = new StreamAdapter(dataset, fields);
    FieldSpecVector specs = Field.toSpecs(fields);
    Dataset result;
    try {
      result = Dataset.fromStream(source, specs);
    } catch (RuntimeException e) {
      source.delete();
      throw e;
    } finally {
      specs.delete();
    }
    source.swigReleaseOwnership();
    return result;
  }

  static final class MapSource extends DatasetSource {
    private final MapDataset dataset;
    private final List<Field> fields;

    MapSource(MapDataset dataset, List<Field> fields) {
      this.dataset = dataset;
      this.fields = fields;
    }

    @Override
    public String getSample(long index, SampleWriter out) {
      try {
        return guarded(() -> dataset.get(index, new Sample(out, fields)));
      } finally {
        out.delete();  // the writer dies with the callback: later use is IllegalStateException
      }
    }
  }

  static Dataset fromSequences(Sequences sequences, List<String> names, CollateFunction function) {
    List<String> copy = List.copyOf(names);
    CollateAdapter collator = new CollateAdapter(function, copy);
    StringVector nameVector = new StringVector(copy);
    Dataset result;
    try {
      result = Dataset.fromSequencesCollate(sequences, nameVector, collator);
    } catch (RuntimeException e) {
      collator.delete();
      throw e;
    } finally {
      nameVector.delete();
    }
    collator.swigReleaseOwnership();  // the dataset deletes it when it and its loaders are gone
    return result;
  }

  static final class CollateAdapter extends Collator {
    private final CollateFunction function;
    private final List<String> names;

    CollateAdapter(CollateFunction function, List<String> names) {
      this.function = function;
      this.names = names;
    }

    private static long[] slice(Int64Vector v, long from, long to) {
      long[] out = new long[(int) (to - from)];
      for (int i = 0; i < out.length; ++i) out[i] = v.get((int) from + i);
      return out;
    }

    @Override
    public String collate(Int64Vector ids, Int64Vector offsets, Int64Vector labels, int labelKind, CollateWriter out) {
      try {
        return guarded(() -> collateInto(ids, offsets, labels, labelKind, out));
      } finally {
        out.delete();  // the writer dies with the callback
      }
    }

    private void collateInto(Int64Vector ids, Int64Vector offsets, Int64Vector labels, int labelKind,
        CollateWriter out) throws Exception {
      List<CollateFunction.SequenceSample> samples = new java.util.ArrayList<>();
      for (int s = 0; s + 1 < offsets.size(); ++s) {
        long begin = offsets.get(s), end = offsets.get(s + 1);
        long[] label = labelKind == 1 ? slice(labels, s, s + 1) : labelKind == 2 ? slice(labels, begin, end) : null;
        samples.add(new CollateFunction.SequenceSample(slice(ids, begin, end), label));
      }
      Map<String, Tensor> batch = function.collate(java.util.Collections.unmodifiableList(samples));
      if (batch == null) throw new NullPointerException("the collate function returned null");
      try {
        if (!new java.util.HashSet<>(names).equals(batch.keySet())) {
          throw new IllegalArgumentException("the collate function returned the fields " + batch.keySet()
              + ", expected " + names);
        }
        for (int i = 0; i < names.size(); ++i) out.put(i, batch.get(names.get(i)));
      } finally {
        for (Tensor t : batch.values()) {
          if (t != null) t.close();
        }
      }
    }
  }

  static final class StreamAdapter extends StreamSource {
    private final IterableDataset dataset;
    private final List<Field> fields;

    StreamAdapter(IterableDataset dataset, List<Field> fields) {
      this.dataset = dataset;
      this.fields = fields;
    }

    @Override
    public String nextSample(SampleWriter out) {
      try {
        return guarded(() -> {
          if (!dataset.next(new Sample(out, fields))) out.endOfStream();
        });
      } finally {
        out.delete();
      }
    }

    @Override
    public String reset(long epoch) {
      return guarded(() -> dataset.reset(epoch));
    }
  }

  static final class CheckpointAdapter extends CheckpointObject {
    private final Checkpointable object;

    CheckpointAdapter(Checkpointable object) {
      this.object = object;
    }

    @Override
    public String saveState(StateWriter out) {
      try {
        return guarded(() -> {
          byte[] state = object.saveState();
          if (state == null) throw new NullPointerException(object.getClass().getName() + ".saveState() returned null");
          out.write(state);
        });
      } finally {
        out.delete();
      }
    }

    @Override
    public String loadState(byte[] data) {
      return guarded(() -> object.loadState(data));
    }
  }

  static final class HookAdapter extends StateHook {
    private final DirectoryHook hook;

    HookAdapter(DirectoryHook hook) {
      this.hook = hook;
    }

    @Override
    public String run(String directory) {
      return guarded(() -> hook.run(directory));
    }
  }

  static final class TrackerAdapter extends TrackerBridge {
    private final Tracker tracker;

    TrackerAdapter(Tracker tracker) {
      this.tracker = tracker;
    }

    @Override
    public String init(String runName, String configJson) {
      return guarded(() -> {
        @SuppressWarnings("unchecked")
        Map<String, Object> config = (Map<String, Object>) Json.read(configJson);
        tracker.start(runName, config);
      });
    }

    @Override
    public String log(StringVector names, DoubleVector values, long step) {
      return guarded(() -> {
        Map<String, Double> map = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); ++i) map.put(names.get(i), values.get(i));
        tracker.log(map, step < 0 ? OptionalLong.empty() : OptionalLong.of(step));
      });
    }

    @Override
    public String finish() {
      return guarded(() -> tracker.finish());
    }
  }
}
