/// A request from the CLI to the running daemon, sent over its command socket
/// (`CommandChannel`).
public enum DaemonCommand: Sendable, Hashable {
  case shield(WindowID)
  case unshield(WindowID)
  /// Pause shielding for a duration (nil: until resume).
  case pause(PolicyDuration?)
  case resume
  /// Reload the policy files (like SIGHUP).
  case reload
  /// Clear the guarded clipboard (copied-text guard).
  case clipboardClear
  /// Are you there? The daemon's loop writes `nonce` to `_CAPTURE_SHIELD_PONG` on its
  /// manager window and replies (`shieldctl status`).
  case ping(nonce: UInt32)
  /// Remove the window's secure tag (`shieldctl untag` while a daemon runs): a tag another
  /// client removes is put back (docs/security.md, "Tags").
  case untag(WindowID)
  /// Set the window's secure tag (`shieldctl tag` while a daemon runs): under the Xorg
  /// module only the window's owner and trusted programs (the daemon) may.
  case tag(WindowID)
  /// The titles of the secure windows, for `shieldctl list`, `status` and `policy explain
  /// --window` (the published state has none: any client can read it). Answered with
  /// `CommandChannel.Reply.titles` to the daemon's own user only (the socket's check).
  case titles
}
