package org.libaccel;

import java.nio.ByteOrder;

/** Checks shared by the array and buffer methods of Tensor and Sample. */
final class Buffers {
  private Buffers() {}

  /** ByteBuffer.allocateDirect is big-endian by default: the bytes would arrive garbled. */
  static void requireNativeOrder(ByteOrder order, String what) {
    if (order != ByteOrder.nativeOrder()) {
      throw new IllegalArgumentException(what + " has byte order " + order + " but libaccel reads "
          + ByteOrder.nativeOrder() + ": use buffer.order(ByteOrder.nativeOrder())");
    }
  }

  static int checkedLength(long count) {
    if (count < 0 || count > Integer.MAX_VALUE - 8) {
      throw new AccelException(Status.ERR_INVALID_ARGUMENT, count + " elements do not fit in a Java array");
    }
    return (int) count;
  }
}
