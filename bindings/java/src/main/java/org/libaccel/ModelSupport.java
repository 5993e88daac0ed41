package org.libaccel;

import java.util.ArrayList;
import java.util.Collections;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The Java side of Model's methods that bindings/swig/accel_java.i declares and delegates here:
 * named outputs, named tensors in and out, and the big-model calls (docs/big-models.md), which
 * cross the C API as JSON maps of module name to "cpu", "disk" or "cuda:N".
 */
final class ModelSupport {
  private ModelSupport() {}

  static Model fromTorchscriptOutputs(String path, List<String> outputNames) {
    return withNames(outputNames, names -> Model.fromTorchscriptOutputs(path, names));
  }

  static Model fromTorchscriptEmpty(String path, List<String> outputNames) {
    return withNames(outputNames, names -> Model.fromTorchscriptEmpty(path, names));
  }

  /** load called with the names as SWIG's vector, freed after. */
  private static Model withNames(List<String> outputNames, java.util.function.Function<StringVector, Model> load) {
    StringVector names = new StringVector(outputNames);
    try {
      return load.apply(names);
    } finally {
      names.delete();
    }
  }

  static LinkedHashMap<String, Long> moduleSizes(Model model, String dtype) {
    return byteCounts(model.moduleSizesJson(dtype == null ? "" : dtype));
  }

  static LinkedHashMap<String, String> inferAutoDeviceMap(Model model, Map<String, String> maxMemory,
                                                          List<String> noSplit, String dtype) {
    StringVector classes = new StringVector(noSplit == null ? Collections.<String>emptyList() : noSplit);
    try {
      String budgets = maxMemory == null ? "" : Json.write(maxMemory);  // null: Accel.getMaxMemory()
      return deviceMapOf(model.inferAutoDeviceMapJson(budgets, classes, dtype == null ? "" : dtype));
    } finally {
      classes.delete();
    }
  }

  static LinkedHashMap<String, Long> balancedMemory(Model model, Map<String, String> maxMemory, List<String> noSplit,
                                                    String dtype, boolean lowZero) {
    StringVector classes = new StringVector(noSplit == null ? Collections.<String>emptyList() : noSplit);
    try {
      String budgets = maxMemory == null ? "" : Json.write(maxMemory);  // null: Accel.getMaxMemory()
      return byteCounts(model.balancedMemoryJson(budgets, classes, dtype == null ? "" : dtype, lowZero));
    } finally {
      classes.delete();
    }
  }

  static void loadCheckpointAndDispatch(Model model, String checkpoint, Map<String, String> deviceMap,
                                        String offloadFolder, String dtype) {
    model.loadCheckpointAndDispatchJson(checkpoint, deviceMap == null ? "" : Json.write(deviceMap),
                                        offloadFolder == null ? "" : offloadFolder, dtype == null ? "" : dtype);
  }

  static void loadCheckpointAndDispatch(Model model, String checkpoint, String strategy, String offloadFolder,
                                        String dtype) {
    model.loadCheckpointAndDispatchJson(checkpoint, Json.write(strategy), offloadFolder == null ? "" : offloadFolder,
                                        dtype == null ? "" : dtype);
  }

  /** A JSON object of byte counts (module sizes, Accel.getMaxMemory's budgets), in its order. */
  static LinkedHashMap<String, Long> byteCounts(String json) {
    LinkedHashMap<String, Long> counts = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : ((Map<?, ?>) Json.read(json)).entrySet()) {
      counts.put((String) e.getKey(), ((Number) e.getValue()).longValue());
    }
    return counts;
  }

  static LinkedHashMap<String, String> deviceMapOf(String json) {
    LinkedHashMap<String, String> map = new LinkedHashMap<>();
    for (Map.Entry<?, ?> e : ((Map<?, ?>) Json.read(json)).entrySet()) {
      map.put((String) e.getKey(), (String) e.getValue());
    }
    return map;
  }

  static LinkedHashMap<String, Tensor> forward(Model model, Map<String, Tensor> inputs) {
    try (TensorMap in = TensorMaps.of(inputs)) {
      return TensorMaps.drain(model.forwardNamed(in));
    }
  }

  static IncompatibleKeys loadStateDict(Model model, Map<String, Tensor> tensors, boolean strict) {
    Map<?, ?> report;
    try (TensorMap in = TensorMaps.of(tensors)) {
      report = (Map<?, ?>) Json.read(model.loadStateDictReportJson(in, strict));
    }
    return new IncompatibleKeys(names(report.get("missing_keys")), names(report.get("unexpected_keys")));
  }

  private static List<String> names(Object list) {
    List<String> out = new ArrayList<>();
    for (Object name : (List<?>) list) out.add((String) name);
    return out;
  }
}
