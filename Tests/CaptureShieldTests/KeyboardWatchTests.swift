// The keyboard watch (`KeyboardWatch`, its decisions in `KeyloggerWatch`) on a fake RECORD
// source and a fake connection: start and stop with the policy, the findings it audits, the
// notice at a secure window's focus, and a source that ended; no X server.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// Keyboard records handed out by `drain`, and the focus a test set.
final class FakeKeylogSource: KeylogSource {
  let ownBases: [UInt32]
  let fileDescriptor: Int32 = -1
  var hasError = false
  var queued: [KeyloggerRecorder.Item] = []
  var focus: UInt32?
  init(bases: [UInt32]) { ownBases = bases }
  func drain() -> [KeyloggerRecorder.Item] {
    defer { queued = [] }
    return queued
  }
  func secureFocus(isSecure: (UInt32) -> Bool) -> UInt32? { focus.flatMap { isSecure($0) ? $0 : nil } }
}

/// The window manager's selection and client bases, with no server.
final class FakeKeyboardConnection: KeyboardWatchConnection {
  let screenNumber: Int32 = 0
  var wmOwner: UInt32 = 0
  var atomsAsked: [String] = []
  func atom(_ name: String) -> UInt32 {
    atomsAsked.append(name)
    return 0x200
  }
  func selectionOwner(_ selection: UInt32) -> UInt32 { selection == 0x200 ? wmOwner : 0 }
  func clientBase(of xid: UInt32) -> UInt32 { xid & ~0x1F_FFFF }
}

@Suite struct KeyboardWatchTests {
  static let logger = ClientID(0x80_0000)
  static let ime = ClientID(0xa0_0000)
  static let wm = ClientID(0xc0_0000)
  static let secure: UInt32 = 0x20_0001
  static let rawKeys = KeyListenSignal(kind: .xi2RawKeys, request: "XISelectEvents", window: 0x1, detail: "RawKeyPress")

  final class Rig {
    let x = FakeKeyboardConnection()
    var sources: [FakeKeylogSource] = []
    var unrecorded: [[UInt32]] = []
    var failStart = false
    var audits: [AuditRecord] = []
    var errors: [String] = []
    var policy = KeyloggerPolicy()
    lazy var watch = KeyboardWatch(
      connection: x,
      makeSource: { [unowned self] bases in
        self.unrecorded.append(bases)
        if self.failStart { throw XError.cannotConnect(display: ":9") }
        let s = FakeKeylogSource(bases: [0x60_0000 + UInt32(self.sources.count) << 21, 0x70_0000])
        self.sources.append(s)
        return s
      }, audit: { [unowned self] in self.audits.append($0) })

    var view: KeyboardWatch.View {
      KeyboardWatch.View(
        policy: policy, own: { [ClientID(0x20_0000)] },
        identity: { c in
          let exe = c == KeyboardWatchTests.ime ? "/usr/bin/ibus-daemon" : "/usr/bin/logger\(c.base >> 21)"
          return ClientIdentity(pid: Int(c.base >> 21), exe: exe, comm: "x", uid: 1000)
        }, identityFields: { [("exe", .string($0.exe ?? "-"))] })
    }

    func sync(_ wanted: Bool) -> [KeyboardWatch.Effect] {
      watch.sync(wanted: wanted, whyNot: "keyloggers.enabled is false", view) { [unowned self] in self.errors.append($0)
      }
    }
    var events: [String] { audits.map(\.event) }
  }

  static func describe(_ effects: [KeyboardWatch.Effect]) -> [String] {
    effects.map {
      switch $0 {
      case .opened(let b): return "opened \(b.count)"
      case .closed(let b): return "closed \(b.count)"
      case .focusMayHaveMoved: return "focus"
      case .ended: return "ended"
      }
    }
  }

  /// Started once with the daemon's own clients unrecorded; stopped with the policy (audited
  /// both ways); a start that failed is tried again only after a reload.
  @Test func startAndStop() {
    let r = Rig()
    #expect(Self.describe(r.sync(true)) == ["opened 2"])
    #expect(r.unrecorded == [[0x20_0000]])
    #expect(Self.describe(r.sync(true)).isEmpty)
    #expect(Self.describe(r.sync(false)) == ["closed 2"])
    #expect(r.watch.source == nil)
    #expect(r.events == ["keylogger-watch", "keylogger-watch"])
    r.failStart = true
    #expect(r.sync(true).isEmpty)
    #expect(r.watch.failed && r.errors.count == 1)
    #expect(r.sync(true).isEmpty)
    #expect(r.unrecorded.count == 2)
    r.failStart = false
    r.watch.reloaded()
    #expect(Self.describe(r.sync(true)) == ["opened 2"])
  }

  /// A listener is audited once per kind; an allowed program (ibus) and the window manager
  /// never; the daemon's own records are skipped.
  @Test func findings() {
    let r = Rig()
    _ = r.sync(true)
    r.x.wmOwner = Self.wm.base | 1
    r.sources[0].queued = [
      .record(Self.logger, .listens(Self.rawKeys), serverTime: 1),
      .record(Self.logger, .listens(Self.rawKeys), serverTime: 2),
      .record(Self.ime, .listens(Self.rawKeys), serverTime: 3),
      .record(Self.wm, .listens(Self.rawKeys), serverTime: 4),
      .record(ClientID(0x20_0000), .listens(Self.rawKeys), serverTime: 5),
    ]
    #expect(Self.describe(r.watch.drain(r.view)) == ["focus"])
    #expect(r.events == ["keylogger-watch", "keylogger-suspected"])
    #expect(r.audits.last?.fields.contains { $0.key == "exe" && $0.value == .string("/usr/bin/logger4") } == true)
  }

  /// The notice: once per focus period of a secure window, audited, while a suspect is
  /// connected; a suspect gone is not named.
  @Test func noticeAtSecureFocus() {
    let r = Rig()
    _ = r.sync(true)
    r.sources[0].queued = [.record(Self.logger, .listens(Self.rawKeys), serverTime: 1)]
    _ = r.watch.drain(r.view)
    let isSecure: (UInt32) -> Bool = { $0 == Self.secure }
    r.sources[0].focus = 0x30_0001
    #expect(r.watch.focusChanged(r.view, isSecure: isSecure) == nil)
    r.sources[0].focus = Self.secure
    let n = r.watch.focusChanged(r.view, isSecure: isSecure)
    #expect(n?.ownSummary != nil)
    #expect(r.watch.focusChanged(r.view, isSecure: isSecure) == nil)
    #expect(r.events == ["keylogger-watch", "keylogger-suspected", "keylogger-notice"])
    r.sources[0].focus = 0x30_0001
    _ = r.watch.focusChanged(r.view, isSecure: isSecure)
    r.sources[0].queued = [.clientDied(Self.logger)]
    #expect(Self.describe(r.watch.drain(r.view)) == ["focus"])
    r.sources[0].focus = Self.secure
    #expect(r.watch.focusChanged(r.view, isSecure: isSecure) == nil)
  }

  /// A source that ended: the loop hears it after the drain's other effects, drops it
  /// (what it saw is forgotten) and the next sync starts a new one.
  @Test func endedSource() {
    let r = Rig()
    _ = r.sync(true)
    r.sources[0].queued = [.record(Self.logger, .listens(Self.rawKeys), serverTime: 1)]
    r.sources[0].hasError = true
    #expect(Self.describe(r.watch.drain(r.view)) == ["focus", "ended"])
    #expect(r.watch.dropSource() == r.sources[0].ownBases)
    #expect(r.watch.dropSource() == nil)
    #expect(r.watch.watch.decided.isEmpty)
    #expect(Self.describe(r.sync(true)) == ["opened 2"])
    #expect(r.sources.count == 2)
  }
}
