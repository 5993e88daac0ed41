package org.libaccel;

/** Returned by Accelerator.registerSaveStatePreHook / registerLoadStatePreHook. */
public final class RemovableHandle {
  private final Accelerator accelerator;
  private final long id;

  RemovableHandle(Accelerator accelerator, long id) {
    this.accelerator = accelerator;
    this.id = id;
  }

  public long id() {
    return id;
  }

  /** Unregisters the hook. */
  public void remove() {
    accelerator.removeHook(id);
  }
}
