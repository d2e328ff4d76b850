// A value behind a pthread mutex, for the state the daemon's threads share.

import Foundation

/// A value behind an `NSLock` (a pthread mutex), not `Synchronization.Mutex`: on Linux
/// `Mutex` locks with raw futex calls that ThreadSanitizer does not see, so the TSan runs
/// (`make sanitize`) reported correctly locked accesses as races, first in `RecordPump`,
/// then in `XClientPrograms`. With a pthread mutex TSan checks the locking for real. Every
/// access goes through `withLock`.
final class Locked<Value>: @unchecked Sendable {
  private let lock = NSLock()
  private var value: Value

  init(_ value: Value) { self.value = value }

  func withLock<R>(_ body: (inout Value) throws -> R) rethrows -> R {
    lock.lock()
    defer { lock.unlock() }
    return try body(&value)
  }
}
