package org.libaccel;

import java.lang.ref.Cleaner;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.LongConsumer;

/**
 * Frees a native object exactly once: at close() (clean()), or from the Cleaner's thread once the
 * Java object owning it is unreachable. The action holds only the pointer, never the owner.
 */
final class NativeCleanup {
  private static final Cleaner CLEANER = Cleaner.create();
  private static final AtomicLong COLLECTED = new AtomicLong();

  private final Action action;
  private final Cleaner.Cleanable cleanable;

  private NativeCleanup(Object owner, Action action) {
    this.action = action;
    this.cleanable = CLEANER.register(owner, action);
  }

  static NativeCleanup register(Object owner, long pointer, LongConsumer deleter) {
    return new NativeCleanup(owner, new Action(pointer, deleter));
  }

  /** Frees the object now, unless that has already happened. */
  void clean() {
    action.closed = true;
    cleanable.clean();
  }

  /** How many objects the Cleaner has freed because nobody closed them (for tests). */
  static long collected() {
    return COLLECTED.get();
  }

  private static final class Action implements Runnable {
    private final long pointer;
    private final LongConsumer deleter;
    volatile boolean closed;

    Action(long pointer, LongConsumer deleter) {
      this.pointer = pointer;
      this.deleter = deleter;
    }

    @Override
    public void run() {
      if (!closed) COLLECTED.incrementAndGet();
      deleter.accept(pointer);
    }
  }
}
