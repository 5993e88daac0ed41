package org.libaccel;

/** Runs with the checkpoint directory before saveState writes or loadState reads. */
@FunctionalInterface
public interface DirectoryHook {
  void run(String directory) throws Exception;
}
