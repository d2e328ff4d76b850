import Foundation

/// The monotonic clock the shell stamps events with.
enum Clock {
  static func now() -> MonotonicTime {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return MonotonicTime(nanoseconds: UInt64(ts.tv_sec) * 1_000_000_000 + UInt64(ts.tv_nsec))
  }
}
