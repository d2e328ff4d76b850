// The learned history (`capture.learn`): loaded at start, saved batched, and taken from
// the file when another writer (`shieldctl history --forget`) changed it.

import CaptureShieldCore
import Foundation

extension WatcherLoop {
  func loadHistory() {
    guard let h = setup.history else { return }
    engine.history = h.load()
    engine.wallBase = Date().timeIntervalSince1970 - Double(Clock.now().nanoseconds) / 1e9
  }

  /// Saves what changed (at most every `HistoryStore.interval`), or takes the file's
  /// entries when another writer changed it.
  func syncHistory() {
    guard let h = setup.history else { return }
    let now = Clock.now()
    if let outside = h.externalChange(now: now) {
      engine.history = outside
      log.info("capture history \(h.path) changed on disk: \(outside.entries.count) programs")
      updateLearnedLaunches()
      return
    }
    h.flushIfDue(engine.history, now: now)
  }
}
