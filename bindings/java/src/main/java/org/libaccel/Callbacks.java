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
        dataset.get(index, new Sample(out, fields));
        return "";
      } catch (Throwable error) {
        return describe(error);
      } finally {
        out.delete();  // the writer dies with the callback: later use is IllegalStateException
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
        if (!dataset.next(new Sample(out, fields))) out.endOfStream();
        return "";
      } catch (Throwable error) {
        return describe(error);
      } finally {
        out.delete();
      }
    }

    @Override
    public String reset(long epoch) {
      try {
        dataset.reset(epoch);
        return "";
      } catch (Throwable error) {
        return describe(error);
      }
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
        byte[] state = object.saveState();
        if (state == null) throw new NullPointerException(object.getClass().getName() + ".saveState() returned null");
        out.write(state);
        return "";
      } catch (Throwable error) {
        return describe(error);
      } finally {
        out.delete();
      }
    }

    @Override
    public String loadState(byte[] data) {
      try {
        object.loadState(data);
        return "";
      } catch (Throwable error) {
        return describe(error);
      }
    }
  }

  static final class HookAdapter extends StateHook {
    private final DirectoryHook hook;

    HookAdapter(DirectoryHook hook) {
      this.hook = hook;
    }

    @Override
    public String run(String directory) {
      try {
        hook.run(directory);
        return "";
      } catch (Throwable error) {
        return describe(error);
      }
    }
  }

  static final class TrackerAdapter extends TrackerBridge {
    private final Tracker tracker;

    TrackerAdapter(Tracker tracker) {
      this.tracker = tracker;
    }

    @Override
    public String init(String runName, String configJson) {
      try {
        tracker.start(runName, configJson);
        return "";
      } catch (Throwable error) {
        return describe(error);
      }
    }

    @Override
    public String log(StringVector names, DoubleVector values, long step) {
      try {
        Map<String, Double> map = new LinkedHashMap<>();
        for (int i = 0; i < names.size(); ++i) map.put(names.get(i), values.get(i));
        tracker.log(map, step < 0 ? OptionalLong.empty() : OptionalLong.of(step));
        return "";
      } catch (Throwable error) {
        return describe(error);
      }
    }

    @Override
    public String finish() {
      try {
        tracker.finish();
        return "";
      } catch (Throwable error) {
        return describe(error);
      }
    }
  }
}
