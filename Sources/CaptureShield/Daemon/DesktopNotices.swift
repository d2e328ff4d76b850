// Desktop notifications of capture (`notify.enabled`): `CaptureNotifier` (core) decides
// after each engine event and each read the module censored; this component owns it and the
// sender, and `DesktopNotifier` sends on its own thread.

import Foundation

/// Where notices go (real: `DesktopNotifier`, the session bus on its own queue; tests: a
/// recording fake). The notices component sends no X request.
protocol NoticeSender: AnyObject {
  /// At start: one `notifications` record, whether notices can be shown.
  func probe()
  /// Shows `notice` (never waits for the bus).
  func send(_ notice: CaptureNotifier.Notice)
}

extension DesktopNotifier: NoticeSender {}

/// The capture notices: on and off with `notify.enabled`, the notices of the capture sessions
/// that started (and, under the Xorg module, of censored reads), rate-limited, each audited
/// (`capture-notice`) and handed to the sender. Runs on the loop's thread; its state is the
/// decider (`CaptureNotifier`) and the sender (nil while off).
final class DesktopNotices {
  private(set) var sender: NoticeSender?
  private(set) var decider = CaptureNotifier()
  /// Makes the sender when notices are turned on.
  let makeSender: () -> NoticeSender
  let audit: (AuditRecord) -> Void

  init(makeSender: @escaping () -> NoticeSender, audit: @escaping (AuditRecord) -> Void) {
    self.makeSender = makeSender
    self.audit = audit
  }

  /// A notice held back by the rate limit is due then (nil while off): the loop wakes for it
  /// and calls `due(now:)`.
  var nextDeadline: MonotonicTime? { sender == nil ? nil : decider.nextDeadline }

  /// After every engine event: turns notifications on or off with the policy, and shows
  /// the notices of the capture sessions that started.
  func sync(engine: Engine, serverEnforced: Bool) {
    if engine.policy.notify != (sender != nil) {
      if engine.policy.notify {
        let s = makeSender()
        s.probe()
        sender = s
      } else {
        sender = nil
        audit(AuditRecord("notifications", [("enabled", .bool(false)), ("why", "notify.enabled is false")]))
      }
      decider = CaptureNotifier()
    }
    guard sender != nil else { return }
    for n in decider.sync(engine: engine, serverEnforced: serverEnforced) { show(n) }
  }

  /// A read the Xorg module censored or refused: a notice when it is news.
  func censored(reader: ClientID, identity: ClientIdentity, engine: Engine, now: MonotonicTime) {
    guard sender != nil else { return }
    for n in decider.censored(reader: reader, identity: identity, engine: engine, now: now) { show(n) }
  }

  /// A notice the rate limit held back, once it is due.
  func due(now: MonotonicTime) {
    guard sender != nil, let d = decider.nextDeadline, now >= d else { return }
    for n in decider.due(now: now) { show(n) }
  }

  /// Another part's notice (the keyboard watch's, audited by it): sent while notices are on.
  func send(_ notice: CaptureNotifier.Notice) { sender?.send(notice) }

  private func show(_ n: CaptureNotifier.Notice) {
    audit(n.audit)
    sender?.send(n)
  }
}
