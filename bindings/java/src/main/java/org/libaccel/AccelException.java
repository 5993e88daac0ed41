package org.libaccel;

/**
 * A libaccel call failed. {@link #getMessage()} is the C layer's message, which names the bad
 * value; {@link #getStatus()} says what kind of failure it was. Unchecked, like the
 * IllegalArgumentException family: most failures are programming errors or unrecoverable.
 */
public class AccelException extends RuntimeException {
  private static final long serialVersionUID = 1L;
  private final int code;

  /** code is an accel_status value (see {@link Status}). */
  public AccelException(int code, String message) {
    super(message);
    this.code = code;
  }

  public AccelException(Status status, String message) {
    this(status.swigValue(), message);
  }

  /** The accel_status value. */
  public int getCode() {
    return code;
  }

  /** The status; ERR_INTERNAL for a code this version does not know. */
  public Status getStatus() {
    for (Status s : Status.values()) {
      if (s.swigValue() == code) return s;
    }
    return Status.ERR_INTERNAL;
  }
}
