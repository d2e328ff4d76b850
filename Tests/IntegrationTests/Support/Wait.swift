// Waiting for a condition in the integration tests.

import ShieldTestSupport

/// Polls `condition` until it holds, or throws after `timeout`.
func waitUntil(
  _ what: String, timeout: Duration = .seconds(5), interval: Duration = .milliseconds(10),
  _ condition: () async throws -> Bool
) async throws {
  let deadline = ContinuousClock.now + timeout
  while try await !condition() {
    if ContinuousClock.now >= deadline { throw TestWindowError.timedOut(what) }
    try await Task.sleep(for: interval)
  }
}
