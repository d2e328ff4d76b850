import Testing

@testable import CaptureShield

/// `_CAPTURE_SHIELD_NOTIFY`: only apps that opted in get `_CAPTURE_SHIELD_CAPTURE_CHANGED`.
@Suite("capture notices go only to windows that opted in")
struct CaptureNoticeOptInTests {
  struct Decoding: Sendable, CustomTestStringConvertible {
    var name: String
    var isCardinal: Bool
    var format: UInt8
    var bytes: [UInt8]
    var wants: Bool
    var testDescription: String { name }
  }

  @Test(
    "decoding the opt-in",
    arguments: [
      Decoding(name: "absent", isCardinal: false, format: 0, bytes: [], wants: false),
      Decoding(name: "1", isCardinal: true, format: 32, bytes: [1, 0, 0, 0], wants: true),
      Decoding(name: "0", isCardinal: true, format: 32, bytes: [0, 0, 0, 0], wants: false),
      Decoding(name: "other bits only", isCardinal: true, format: 32, bytes: [2, 0, 0, 0x80], wants: false),
      Decoding(name: "bit 0 among others", isCardinal: true, format: 32, bytes: [3, 0, 0, 0], wants: true),
      Decoding(name: "two items", isCardinal: true, format: 32, bytes: [1, 0, 0, 0, 0, 0, 0, 0], wants: true),
      Decoding(name: "format 8", isCardinal: true, format: 8, bytes: [1, 0, 0, 0], wants: false),
      Decoding(name: "not CARDINAL", isCardinal: false, format: 32, bytes: [1, 0, 0, 0], wants: false),
      Decoding(name: "short", isCardinal: true, format: 32, bytes: [1], wants: false),
    ])
  func decoding(_ c: Decoding) {
    let n = CaptureNotices.decode(isCardinal: c.isCardinal, format: c.format, bytes: c.bytes)
    #expect(n.contains(.captureChanged) == c.wants)
  }

  struct Target: Sendable, CustomTestStringConvertible {
    var name: String
    var tag: TagState
    var notices: CaptureNotices
    var sent: Bool
    var testDescription: String { name }
  }

  @Test(
    "who is sent the ClientMessage",
    arguments: [
      Target(name: "secure, opted in", tag: .secure, notices: .captureChanged, sent: true),
      Target(name: "secure, never asked (Qt logs each one)", tag: .secure, notices: [], sent: false),
      Target(name: "malformed tag (secure), opted in", tag: .malformed, notices: .captureChanged, sent: true),
      Target(name: "not secure, opted in", tag: .absent, notices: .captureChanged, sent: false),
      Target(name: "not secure, never asked", tag: .notSecure, notices: [], sent: false),
    ])
  func target(_ c: Target) {
    var e = Engine(policy: Policy())
    let w = WindowInfo(id: 0x100, client: ClientID(0x40_0000), tag: c.tag, notices: c.notices)
    _ = e.handle(.windowAppeared(w), now: .seconds(1))
    #expect(Engine.sendsCaptureChanged(e.windows[0x100]!) == c.sent)
    // A capture starts: the root property for everyone, the message only to this window if sent.
    let fx = e.handle(
      .captureRequest(ClientID(0x60_0000), CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(2))
    let notify = fx.compactMap { f -> [WindowID]? in
      if case .notifyCapture(true, let ws) = f { return ws }
      return nil
    }
    #expect(notify == [c.sent ? [0x100] : []])
  }

  @Test("opting in later takes effect at the next change")
  func optInLater() {
    var e = Engine(policy: Policy())
    var w = WindowInfo(id: 0x100, client: ClientID(0x40_0000), tag: .secure)
    _ = e.handle(.windowAppeared(w), now: .seconds(1))
    w.notices = .captureChanged
    _ = e.handle(.windowChanged(w), now: .seconds(1.5))
    let fx = e.handle(
      .captureRequest(ClientID(0x60_0000), CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(2))
    #expect(fx.contains(.notifyCapture(active: true, windows: [0x100])))
  }
}
