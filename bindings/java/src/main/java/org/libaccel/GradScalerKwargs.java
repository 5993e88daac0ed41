package org.libaccel;

/**
 * Accelerate's GradScalerKwargs: fp16 dynamic loss scaling; {@code enabled(false)} trains fp16
 * without scaling. Values are checked when the accelerator is built.
 */
public final class GradScalerKwargs extends KwargsHandler {
  private Double initScale, growthFactor, backoffFactor;
  private Long growthInterval;
  private Boolean enabled;

  public GradScalerKwargs initScale(double value) {
    initScale = value;
    return this;
  }

  public GradScalerKwargs growthFactor(double value) {
    growthFactor = value;
    return this;
  }

  public GradScalerKwargs backoffFactor(double value) {
    backoffFactor = value;
    return this;
  }

  public GradScalerKwargs growthInterval(long steps) {
    growthInterval = steps;
    return this;
  }

  public GradScalerKwargs enabled(boolean on) {
    enabled = on;
    return this;
  }

  @Override
  void applyTo(AcceleratorOptions o) {
    if (initScale != null) o.setScalerInitScale(initScale);
    if (growthFactor != null) o.setScalerGrowthFactor(growthFactor);
    if (backoffFactor != null) o.setScalerBackoffFactor(backoffFactor);
    if (growthInterval != null) o.setScalerGrowthInterval(growthInterval);
    if (enabled != null) o.setScalerEnabled(enabled);
  }
}
