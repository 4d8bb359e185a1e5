package io.rxe4j.core.device;

import org.slf4j.Logger;

/**
 * Lets at most {@code burst} log lines through per {@code intervalNanos} of the loop's clock and
 * counts the rest, so that a fault repeated per packet cannot flood the log; the next line that
 * gets through says how many were suppressed. Thread-safe: the lanes (event loops) of a device share
 * one budget; {@link #warn} is synchronized, and it is called only on error paths.
 */
final class RateLimitedLog {
    private final Logger log;
    private final long intervalNanos;
    private final int burst;
    private long windowStart = Long.MIN_VALUE;
    private int inWindow;
    private long suppressed;

    RateLimitedLog(Logger log, long intervalNanos, int burst) {
        this.log = log;
        this.intervalNanos = intervalNanos;
        this.burst = burst;
    }

    /**
     * Logs {@code message} at WARN (with {@code cause}'s stack trace if not null) unless the
     * budget of this interval is spent.
     *
     * @param now the loop's clock, in nanoseconds
     * @return whether the line was logged
     */
    synchronized boolean warn(long now, String message, Throwable cause) {
        if (windowStart == Long.MIN_VALUE || now - windowStart >= intervalNanos) {
            windowStart = now;
            inWindow = 0;
        }
        if (inWindow >= burst) {
            suppressed++;
            return false;
        }
        inWindow++;
        String line = suppressed == 0 ? message : message + " (" + suppressed + " similar messages suppressed)";
        suppressed = 0;
        if (cause != null) {
            log.warn(line, cause);
        } else {
            log.warn(line);
        }
        return true;
    }
}
