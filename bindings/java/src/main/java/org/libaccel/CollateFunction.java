package org.libaccel;

import java.util.List;
import java.util.Map;

/**
 * A collate function written in Java (Accelerate users' {@code collate_fn}): turns the samples of
 * one batch into one tensor per field name, each with {@code samples.size()} rows on dim 0. The
 * library copies the tensors and then closes them. With num_workers &gt; 0 it runs on the loader's
 * worker threads. An exception it throws becomes an AccelException (naming it) at the loader call;
 * a field with the wrong number of rows is ERR_INVALID_ARGUMENT naming the field and both shapes.
 */
@FunctionalInterface
public interface CollateFunction {
  Map<String, Tensor> collate(List<SequenceSample> samples) throws Exception;

  /** One sample: its ids and, when the sequences have labels, one label or one per token (else null). */
  record SequenceSample(long[] inputIds, long[] labels) {}
}
