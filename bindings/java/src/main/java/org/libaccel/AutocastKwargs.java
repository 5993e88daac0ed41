package org.libaccel;

/**
 * Accelerate's AutocastKwargs: {@code enabled(false)} runs prepared models' forward, and {@code
 * accelerator.autocast()} scopes, in float32 under a mixed precision; cacheEnabled switches
 * LibTorch's autocast cast cache. Also {@code accelerator.autocast(handler)} for one scope.
 */
public final class AutocastKwargs extends KwargsHandler {
  private boolean enabled = true;
  private Boolean cacheEnabled;

  public AutocastKwargs enabled(boolean on) {
    enabled = on;
    return this;
  }

  public AutocastKwargs cacheEnabled(boolean on) {
    cacheEnabled = on;
    return this;
  }

  public boolean enabled() { return enabled; }

  @Override
  void applyTo(AcceleratorOptions o) {
    o.setAutocastEnabled(enabled);
    if (cacheEnabled != null) o.setAutocastCacheEnabled(cacheEnabled ? 1 : 0);
  }
}
