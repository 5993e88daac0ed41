package org.libaccel;

import java.time.Duration;

/**
 * Accelerate's InitProcessGroupKwargs: the process group's backend ("gloo" on the CPU, "nccl" on
 * CUDA; unset: the device's), init method ("env://" or "tcp://HOST:PORT") and timeout. A value
 * libaccel cannot run makes build() throw AccelException naming it.
 */
public final class InitProcessGroupKwargs extends KwargsHandler {
  private String backend, initMethod;
  private Duration timeout;

  public InitProcessGroupKwargs backend(String name) {
    backend = name;
    return this;
  }

  public InitProcessGroupKwargs initMethod(String method) {
    initMethod = method;
    return this;
  }

  public InitProcessGroupKwargs timeout(Duration value) {
    if (value.isNegative() || value.isZero()) {
      throw new IllegalArgumentException("timeout must be positive, got " + value);
    }
    timeout = value;
    return this;
  }

  @Override
  void applyTo(AcceleratorOptions o) {
    if (backend != null) o.setBackend(backend);
    if (initMethod != null) o.setInitMethod(initMethod);
    if (timeout != null) o.setTimeoutMs(timeout.toMillis());
  }
}
