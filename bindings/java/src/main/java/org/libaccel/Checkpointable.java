package org.libaccel;

/**
 * A Java object saved with every Accelerator.saveState and restored by loadState
 * (Accelerate's register_for_checkpointing): its state is the bytes it chooses.
 */
public interface Checkpointable {
  byte[] saveState() throws Exception;

  void loadState(byte[] state) throws Exception;
}
