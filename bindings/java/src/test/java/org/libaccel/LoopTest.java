package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** What an evaluation loop needs around the model: noGrad, loss options, metrics, loadStateDict. */
class LoopTest {
  static final String LINEAR = "[{\"type\": \"Linear\", \"in_features\": 2, \"out_features\": 1}]";

  @Test
  void noGradScopeStopsAutogradUntilItCloses() {
    try (Accelerator acc = Accelerator.builder().cpu(true).build();
         Model model = Model.fromJson(LINEAR);
         Tensor x = Tensor.of(new float[] {1, 1}, 1, 2)) {
      try (Scope scope = acc.noGrad()) {
        try (Tensor loss = model.forward(x).sum()) {
          AccelException e = assertThrows(AccelException.class, () -> acc.backward(loss));
          assertTrue(e.getMessage().contains("does not require grad"), e.getMessage());
        }
      }
      try (Tensor loss = model.forward(x).sum()) {
        acc.backward(loss);
      }
      AccelException e = assertThrows(AccelException.class, acc::noGradEnd);
      assertEquals(Status.ERR_STATE, e.getStatus());
    }
  }

  @Test
  void lossOptionsAndMetricOperations() {
    float[] data = new float[12];
    for (int i = 0; i < 12; ++i) data[i] = ((i * 7) % 5) * 0.5f - 1f;
    try (Tensor x = Tensor.of(data, 3, 4); Tensor y = Tensor.of(new long[] {1, -100, 3});
         Tensor loss = x.lossExt(LossKind.LOSS_CROSS_ENTROPY, y, -100, 0.1);
         TensorMap top = x.topk(2, 1); Tensor indices = top.get("indices");
         Tensor zero = Tensor.of(new float[] {0}); Tensor positive = x.compare(zero, CompareOp.COMPARE_GT);
         Tensor share = positive.mean()) {
      assertEquals(1.435422658920288, loss.item(), 1e-5);  // torch.nn.functional.cross_entropy
      assertArrayEquals(new long[] {3, 2}, indices.shape());
      assertEquals(1.0 / 3.0, share.item(), 1e-6);  // 4 of 12 scores are positive
      AccelException e = assertThrows(AccelException.class, () -> x.narrow(1, 3, 2));
      assertTrue(e.getMessage().contains("start 3 and length 2 do not fit dim 1"), e.getMessage());
    }
  }

  @Test
  void loadStateDictIsAllOrNothing() {
    try (Model model = Model.fromJson(LINEAR);
         Tensor w = Tensor.of(new float[] {3, 4}, 1, 2);
         Tensor b = Tensor.of(new float[] {5}, 1);
         Tensor x = Tensor.of(new float[] {1, 1}, 1, 2)) {
      Map<String, Tensor> tensors = new LinkedHashMap<>();
      tensors.put("0.weight", w);
      AccelException e = assertThrows(AccelException.class, () -> model.loadStateDict(tensors, true));
      assertTrue(e.getMessage().contains("missing 0.bias"), e.getMessage());
      tensors.put("0.bias", b);
      assertTrue(model.loadStateDict(tensors, true).allMatched());
      try (Tensor out = model.forward(x)) {
        assertEquals(12.0, out.item(), 0.0);
      }
    }
  }

  @Test
  void nonStrictLoadStateDictReturnsTheSkippedNames() {
    try (Model model = Model.fromJson(LINEAR);
         Tensor w = Tensor.of(new float[] {3, 4}, 1, 2);
         Tensor extra = Tensor.of(new float[] {0}, 1)) {
      Map<String, Tensor> tensors = new LinkedHashMap<>();
      tensors.put("z.extra", extra);
      tensors.put("0.weight", w);
      tensors.put("a.extra", extra);
      IncompatibleKeys keys = model.loadStateDict(tensors, false);
      assertEquals(List.of("0.bias"), keys.missingKeys());
      assertEquals(List.of("a.extra", "z.extra"), keys.unexpectedKeys());
      assertFalse(keys.allMatched());
      Map<String, Tensor> parameters = model.parameters();
      try {
        assertArrayEquals(new float[] {3, 4}, parameters.get("0.weight").toFloatArray());
      } finally {
        parameters.values().forEach(Tensor::close);
      }
    }
  }
}
