package org.libaccel;

/** Accelerate's get_logger: messages go to stderr, by default from the main process only. */
public final class Logger {
  private final String name;

  private Logger(String name) {
    this.name = name;
  }

  public static Logger get(String name) {
    return new Logger(name);
  }

  public void log(LogLevel level, String message, boolean mainProcessOnly) {
    Accel.logMessage(name, level, message, mainProcessOnly);
  }

  public void debug(String message) {
    log(LogLevel.LOG_DEBUG, message, true);
  }

  public void info(String message) {
    log(LogLevel.LOG_INFO, message, true);
  }

  public void warning(String message) {
    log(LogLevel.LOG_WARNING, message, true);
  }

  public void error(String message) {
    log(LogLevel.LOG_ERROR, message, true);
  }
}
