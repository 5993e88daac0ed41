package org.libaccel;

import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.FloatBuffer;
import org.junit.jupiter.api.Test;

/** Tensors from and to Java arrays and buffers, dtype and size checks, closed tensors. */
class TensorTest {
  @Test
  void versionAndFeatures() {
    assertEquals(2, Accel.version().chars().filter(c -> c == '.').count());
    assertEquals(0, Accel.abiVersion());
    assertTrue(Accel.hasFeature(Feature.FEATURE_GLOO));
    assertEquals(4, Accel.dtypeSize(DType.FLOAT32));
  }

  @Test
  void arraysRoundTripWithTheirDTypeAndShape() {
    float[] floats = {1.5f, -2f, 3f, 4f, 5f, 6f};
    try (Tensor t = Tensor.of(floats, 2, 3)) {
      assertEquals(DType.FLOAT32, t.dtype());
      assertArrayEquals(new long[] {2, 3}, t.shape());
      assertEquals(6, t.numel());
      assertEquals(24, t.nbytes());
      assertArrayEquals(floats, t.toFloatArray());
    }
    double[] doubles = {0.1, 0.2, 0.3};
    try (Tensor t = Tensor.of(doubles)) {
      assertEquals(DType.FLOAT64, t.dtype());
      assertArrayEquals(new long[] {3}, t.shape());
      assertArrayEquals(doubles, t.toDoubleArray());
    }
    long[] longs = {Long.MAX_VALUE, -1, 7, 0};
    try (Tensor t = Tensor.of(longs, 2, 2)) {
      assertEquals(DType.INT64, t.dtype());
      assertArrayEquals(longs, t.toLongArray());
    }
    int[] ints = {3, 1, 4, 1, 5};
    try (Tensor t = Tensor.of(ints)) {
      assertEquals(DType.INT32, t.dtype());
      assertArrayEquals(ints, t.toIntArray());
    }
    boolean[] bools = {true, false, true};
    try (Tensor t = Tensor.of(bools)) {
      assertEquals(DType.BOOL, t.dtype());
      assertArrayEquals(bools, t.toBooleanArray());
    }
    byte[] pixels = {0, 127, (byte) 255, 1};
    try (Tensor t = Tensor.ofBytes(pixels, DType.UINT8, 2, 2)) {
      assertEquals(DType.UINT8, t.dtype());
      assertArrayEquals(pixels, t.toByteArray());
      try (Tensor total = t.sum()) {
        assertEquals(383.0, total.item());
      }
    }
  }

  @Test
  void scalarHasNoDimensions() {
    try (Tensor t = Tensor.scalar(2.5)) {
      assertArrayEquals(new long[0], t.shape());
      assertEquals(0, t.dim());
      assertEquals(2.5, t.item());
    }
  }

  @Test
  void dataThatDoesNotMatchTheShapeIsAnAccelException() {
    AccelException e = assertThrows(AccelException.class, () -> Tensor.of(new float[5], 2, 3));
    assertEquals(Status.ERR_INVALID_ARGUMENT, e.getStatus());
    assertEquals(Status.ERR_INVALID_ARGUMENT.swigValue(), e.getCode());
    assertTrue(e.getMessage().contains("bytes"), e.getMessage());
  }

  @Test
  void copyOutChecksDTypeAndLength() {
    try (Tensor t = Tensor.of(new float[] {1, 2, 3, 4})) {
      AccelException wrongType = assertThrows(AccelException.class, t::toLongArray);
      assertTrue(wrongType.getMessage().contains("FLOAT32"), wrongType.getMessage());
      assertThrows(AccelException.class, () -> t.copyTo(new float[3]));
      float[] out = new float[4];
      t.copyTo(out);
      assertArrayEquals(new float[] {1, 2, 3, 4}, out);
      byte[] raw = new byte[16];
      t.copyTo(raw);
      assertEquals(1f, ByteBuffer.wrap(raw).order(ByteOrder.nativeOrder()).getFloat(0));
    }
  }

  @Test
  void directBuffersInNativeOrderAreReadAndWritten() {
    FloatBuffer in = ByteBuffer.allocateDirect(6 * 4).order(ByteOrder.nativeOrder()).asFloatBuffer();
    for (int i = 0; i < 6; ++i) in.put(i, i * 0.5f);
    in.position(2);  // the remaining 4 elements
    try (Tensor t = Tensor.fromBuffer(in, 2, 2)) {
      assertArrayEquals(new float[] {1f, 1.5f, 2f, 2.5f}, t.toFloatArray());
      FloatBuffer out = ByteBuffer.allocateDirect(4 * 4).order(ByteOrder.nativeOrder()).asFloatBuffer();
      t.copyTo(out);
      assertEquals(2.5f, out.get(3));
      assertEquals(0, out.position());
    }
    ByteBuffer bytes = ByteBuffer.allocateDirect(16).order(ByteOrder.nativeOrder());
    bytes.putLong(0, 41).putLong(8, 42);
    try (Tensor t = Tensor.fromBuffer(bytes, DType.INT64)) {
      assertArrayEquals(new long[] {41, 42}, t.toLongArray());
    }
  }

  @Test
  void bigEndianBufferIsRejectedBeforeAnythingIsRead() {
    ByteBuffer bigEndian = ByteBuffer.allocateDirect(16);  // Java's default order
    IllegalArgumentException e = assertThrows(IllegalArgumentException.class,
        () -> Tensor.fromBuffer(bigEndian.asFloatBuffer()));
    assertTrue(e.getMessage().contains("nativeOrder"), e.getMessage());
    assertThrows(IllegalArgumentException.class, () -> Tensor.fromBuffer(bigEndian, DType.FLOAT32));
  }

  @Test
  void heapBuffersAreCopied() {
    try (Tensor t = Tensor.fromBuffer(FloatBuffer.wrap(new float[] {9, 8, 7}))) {
      assertArrayEquals(new float[] {9, 8, 7}, t.toFloatArray());
    }
  }

  @Test
  void tensorOps() {
    try (Tensor a = Tensor.of(new float[] {1, 5, 2, 7, 0, 1}, 2, 3);
         Tensor arg = a.argmax(1);
         Tensor sum = a.sum();
         Tensor b = Tensor.of(new float[] {1, 0, 2, 7, 0, 0}, 2, 3);
         Tensor same = a.eq(b);
         Tensor count = same.sum()) {
      assertArrayEquals(new long[] {1, 0}, arg.toLongArray());
      assertEquals(16.0, sum.item());
      assertEquals(4.0, count.item());
      assertEquals("Tensor(shape=[2, 3], dtype=FLOAT32)", a.toString());
    }
  }

  @Test
  void closedTensorThrowsIllegalStateAndClosingTwiceIsFine() {
    Tensor t = Tensor.of(new float[] {1, 2, 3});
    t.close();
    t.close();
    IllegalStateException e = assertThrows(IllegalStateException.class, t::numel);
    assertEquals("Tensor is closed", e.getMessage());
    assertThrows(IllegalStateException.class, t::toFloatArray);
    assertEquals("Tensor(closed)", t.toString());
  }

  @Test
  void closedTensorAsArgumentIsAnAccelException() {
    try (Model model = Model.fromJson(ModelTest.LINEAR)) {
      Tensor x = Tensor.of(new float[4], 1, 4);
      x.close();
      assertThrows(AccelException.class, () -> model.forward(x));
    }
  }

  @Test
  void unclosedTensorsAreFreedByTheCleaner() throws InterruptedException {
    long before = NativeCleanup.collected();
    for (int i = 0; i < 2000; ++i) Tensor.of(new float[256]).numel();  // never closed
    for (int tries = 0; tries < 200 && NativeCleanup.collected() == before; ++tries) {
      System.gc();
      Thread.sleep(20);
    }
    assertTrue(NativeCleanup.collected() > before, "the Cleaner freed none of 2000 unreachable tensors");
  }
}
