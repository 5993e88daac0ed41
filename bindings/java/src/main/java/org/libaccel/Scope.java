package org.libaccel;

/**
 * A block opened by Accelerator.accumulate / autocast / mainProcessFirst / noSync and closed
 * by try-with-resources: {@code try (Scope s = acc.accumulate(model)) { ... }}.
 */
@FunctionalInterface
public interface Scope extends AutoCloseable {
  /** Ends the block; throws AccelException (unchecked) if that fails. */
  @Override
  void close();
}
