// The capture notices' routing (`DesktopNotices` owns their state; `CaptureNotifier`
// decides): the loop hands it the engine after each event, the reads the module censored,
// and the time.

extension WatcherLoop {
  /// After every engine event (see `DesktopNotices.sync`).
  func syncNotifications() {
    notices.sync(engine: engine, serverEnforced: module != nil)
  }

  /// A read the Xorg module censored or refused: a notice when it is news.
  func noticeCensored(reader: ClientID, identity: ClientIdentity) {
    notices.censored(reader: reader, identity: identity, engine: engine, now: Clock.now())
  }

  /// A notice the rate limit held back, once it is due (the loop wakes for `nextDeadline`).
  func noticesDue() {
    notices.due(now: Clock.now())
  }
}
