/// Who may lift a window's `_CAPTURE_SHIELD_SECURE` tag (docs/security.md, "Tags"): the window's
/// own client, or the daemon on behalf of `shieldctl untag` (a command over the command
/// socket). Another client's removal is undone. The remover comes from RECORD (the
/// `DeleteProperty` request, `TagWatch`); a tag zeroed or removed with no recorded
/// `DeleteProperty` of the window's own client (a ChangeProperty to 0, whose sender X does
/// not say, or a lost record) is put back: fail safe.
public enum TagGuard {
  /// What becomes of a secure tag that was removed or zeroed.
  public enum Verdict: Sendable, Hashable {
    /// The owner (or the daemon for shieldctl) lifted it: the change stands.
    case lift
    /// Someone else did, or nobody we can name: the tag is put back, the window stays
    /// protected, and the removal is audited (`tag-tampered`).
    case restore
  }

  /// `remover`: the client whose `DeleteProperty` of the tag RECORD saw (nil: none seen);
  /// `owner`: the window's client; `daemon`: the daemon's own clients.
  public static func verdict(remover: ClientID?, owner: ClientID?, daemon: Set<ClientID>) -> Verdict {
    guard let remover else { return .restore }
    if remover == owner || daemon.contains(remover) { return .lift }
    return .restore
  }

  /// A recorded core `DeleteProperty` request (opcode 19: window, property), or nil for
  /// any other request.
  public static func deletedProperty(_ request: UnsafeRawBufferPointer, bigEndian: Bool) -> (
    window: UInt32, property: UInt32
  )? {
    guard request.count >= 12, request[0] == deletePropertyOpcode else { return nil }
    return (RequestReader.load32(request, 4, bigEndian), RequestReader.load32(request, 8, bigEndian))
  }

  /// The core request `DeleteProperty`.
  public static let deletePropertyOpcode: UInt8 = 19
}

extension TagState {
  /// Whether the tag makes the window secure (`secure`, or `malformed`: fail safe).
  public var asksSecure: Bool { self == .secure || self == .malformed }
}
