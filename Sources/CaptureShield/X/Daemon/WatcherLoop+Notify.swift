// Desktop notifications of capture (`notify.enabled`): `CaptureNotifier` decides after each
// engine event and each read the module censored; `DesktopNotifier` sends on its own thread.

import Foundation

extension WatcherLoop {
  /// After every engine event: turns notifications on or off with the policy, and shows
  /// the notices of the capture sessions that started.
  func syncNotifications() {
    if engine.policy.notify != (notifier != nil) {
      if engine.policy.notify {
        // The daemon's own log: its lock keeps the queue's records and the loop's whole.
        let n = DesktopNotifier(environment: ProcessInfo.processInfo.environment, log: log)
        n.probe()
        notifier = n
      } else {
        notifier = nil
        log.write(AuditRecord("notifications", [("enabled", .bool(false)), ("why", "notify.enabled is false")]))
      }
      notices = CaptureNotifier()
    }
    guard notifier != nil else { return }
    for n in notices.sync(engine: engine, serverEnforced: module != nil) { showNotice(n) }
  }

  /// A read the Xorg module censored or refused: a notice when it is news.
  func noticeCensored(reader: ClientID, identity: ClientIdentity) {
    guard notifier != nil else { return }
    for n in notices.censored(reader: reader, identity: identity, engine: engine, now: Clock.now()) { showNotice(n) }
  }

  /// A notice the rate limit held back, once it is due (the loop wakes for `nextDeadline`).
  func noticesDue() {
    guard notifier != nil, let d = notices.nextDeadline, Clock.now() >= d else { return }
    for n in notices.due(now: Clock.now()) { showNotice(n) }
  }

  private func showNotice(_ n: CaptureNotifier.Notice) {
    log.write(n.audit)
    notifier?.send(n)
  }
}
