// The copied-text guard on a real Xvfb: an in-test app owning a secure window copies a
// known secret to CLIPBOARD / PRIMARY; background readers (xclip) get nothing, the focused
// reader gets the exact text (INCR for large text), an allowed clipboard manager sees the
// concealed hint, clearAfter clears, and copies from non-secure windows are untouched.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Synchronization
import Testing

/// Waits for the next event on `c` satisfying `match`, up to `timeout`; nil on timeout.
private func waitEvent(
  _ c: TestXConnection, timeout: Duration = .seconds(5),
  _ match: (UnsafeMutablePointer<xcb_generic_event_t>) -> Bool
) -> Bool {
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    while let ev = xcb_poll_for_event(c.raw) {
      defer { free(ev) }
      if match(ev) { return true }
    }
    var fds = [pollfd(fd: xcb_get_file_descriptor(c.raw), events: Int16(POLLIN), revents: 0)]
    _ = poll(&fds, 1, 20)
  }
  return false
}

private func sendNotify(_ c: TestXConnection, _ e: xcb_selection_request_event_t, property: xcb_atom_t) {
  var ev = xcb_selection_notify_event_t()
  ev.response_type = UInt8(XCB_SELECTION_NOTIFY)
  ev.time = e.time
  ev.requestor = e.requestor
  ev.selection = e.selection
  ev.target = e.target
  ev.property = property
  var buf = [CChar](repeating: 0, count: 32)
  withUnsafeBytes(of: &ev) { raw in for i in 0..<min(32, raw.count) { buf[i] = CChar(bitPattern: raw[i]) } }
  xcb_send_event(c.raw, 0, e.requestor, 0, buf)
  c.flush()
}

/// An app that owns a window (tagged secure or not) and copies `text` to selections,
/// serving TARGETS and UTF8_STRING from its own thread.
final class CopySource: @unchecked Sendable {
  let connection: TestXConnection
  let window: xcb_window_t
  let text: [UInt8]
  private let stopped = Mutex(false)
  private var thread: Thread?

  init(display: String, secure: Bool, text: String) throws {
    connection = try TestXConnection(display: display)
    self.text = Array(text.utf8)
    let c = connection.raw
    window = connection.generateID()
    let values: [UInt32] = [1]
    xcb_create_window(
      c, UInt8(XCB_COPY_FROM_PARENT), window, connection.root, 10, 10, 40, 40, 0,
      UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), connection.rootVisual, XCB_CW_OVERRIDE_REDIRECT.rawValue, values)
    if secure {
      var one: UInt32 = 1
      xcb_change_property(
        c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, try connection.internAtom("_CAPTURE_SHIELD_SECURE"), 6, 32,
        1, &one)
    }
    xcb_map_window(c, window)
    try connection.sync()
  }

  /// Takes ownership of `selections` and serves them until `stop()`.
  func copy(to selections: [String]) throws {
    let targets = try connection.internAtom("TARGETS")
    let utf8 = try connection.internAtom("UTF8_STRING")
    for s in selections { xcb_set_selection_owner(connection.raw, window, try connection.internAtom(s), 0) }
    try connection.sync()
    guard thread == nil else { return }
    let t = Thread { [self] in
      while !stopped.withLock({ $0 }) {
        _ = waitEvent(connection, timeout: .milliseconds(50)) { ev in
          guard Int32(ev.pointee.response_type & 0x7f) == XCB_SELECTION_REQUEST else { return false }
          let e = UnsafeRawPointer(ev).load(as: xcb_selection_request_event_t.self)
          let prop = e.property == 0 ? e.target : e.property
          if e.target == targets {
            var list: [UInt32] = [targets, utf8]
            xcb_change_property(
              connection.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), e.requestor, prop, 4, 32, 2, &list)
            sendNotify(connection, e, property: prop)
          } else if e.target == utf8 {
            xcb_change_property(
              connection.raw, UInt8(XCB_PROP_MODE_REPLACE.rawValue), e.requestor, prop, utf8, 8, UInt32(text.count),
              text)
            sendNotify(connection, e, property: prop)
          } else {
            sendNotify(connection, e, property: 0)
          }
          return false
        }
      }
    }
    thread = t
    t.start()
  }

  func stop() {
    stopped.withLock { $0 = true }
    usleep(100_000)
  }
}

/// A reader owning a window: optionally gives it the input focus, then converts the
/// selection (INCR included). nil when refused (property None) or on timeout.
private func readSelection(
  display: String, _ selection: String, target: String = "UTF8_STRING", focus: Bool
) throws -> (type: xcb_atom_t, data: [UInt8])? {
  let x = try TestXConnection(display: display)
  defer { x.disconnect() }
  let c = x.raw
  let w = x.generateID()
  let values: [UInt32] = [1, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue]
  xcb_create_window(
    c, UInt8(XCB_COPY_FROM_PARENT), w, x.root, 300, 10, 40, 40, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
    x.rootVisual, XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue, values)
  xcb_map_window(c, w)
  if focus { xcb_set_input_focus(c, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), w, 0) }
  let prop = try x.internAtom("CS_TEST_READ")
  let incr = try x.internAtom("INCR")
  xcb_convert_selection(c, w, try x.internAtom(selection), try x.internAtom(target), prop, 0)
  x.flush()
  var notified: xcb_atom_t = 0
  let answered = waitEvent(x) { ev in
    guard Int32(ev.pointee.response_type & 0x7f) == XCB_SELECTION_NOTIFY else { return false }
    notified = UnsafeRawPointer(ev).load(as: xcb_selection_notify_event_t.self).property
    return true
  }
  guard answered, notified != 0 else { return nil }
  func take() -> (xcb_atom_t, [UInt8])? {
    guard let r = xcb_get_property_reply(c, xcb_get_property(c, 1, w, prop, 0, 0, 1 << 26), nil) else { return nil }
    defer { free(r) }
    let n = Int(xcb_get_property_value_length(r))
    let p = xcb_get_property_value(r)!.assumingMemoryBound(to: UInt8.self)
    return (r.pointee.type, Array(UnsafeBufferPointer(start: p, count: n)))
  }
  guard let first = take() else { return nil }
  guard first.0 == incr else { return first }
  x.flush()
  var data: [UInt8] = []
  var type: xcb_atom_t = 0
  while true {
    let got = waitEvent(x) { ev in
      guard Int32(ev.pointee.response_type & 0x7f) == XCB_PROPERTY_NOTIFY else { return false }
      let e = UnsafeRawPointer(ev).load(as: xcb_property_notify_event_t.self)
      return e.atom == prop && e.state == UInt8(XCB_PROPERTY_NEW_VALUE.rawValue)
    }
    guard got, let chunk = take() else { return nil }
    x.flush()
    if chunk.1.isEmpty { return (type, data) }
    type = chunk.0
    data += chunk.1
  }
}

/// Focus on a window of another client (so that xclip is a background reader).
private func focusElsewhere(_ server: XvfbServer) async throws -> TestWindow {
  let w = try await TestWindow.open(on: server, rect: PixelRect(x: 400, y: 300, width: 50, height: 50), color: .red)
  let x = try server.connect()
  defer { x.disconnect() }
  xcb_set_input_focus(x.raw, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), w.id, 0)
  try x.sync()
  return w
}

@Suite("Copied-text guard", .timeLimit(.minutes(5)), .serialized)
struct ClipboardIntegrationTests {
  static let secret = "pässwörd 🔑 秘密 correct-horse"

  func guarded(_ daemon: DaemonProcess, _ sel: String) throws -> DaemonState.ClipboardState.Row? {
    try daemon.state()?.clipboard?.guarded.first { $0.selection == sel && $0.state == "guarded" }
  }

  func waitGuarded(_ daemon: DaemonProcess, _ sels: [String]) async throws {
    try await waitUntil("the daemon guards \(sels)", timeout: .seconds(10)) {
      try sels.allSatisfy { try guarded(daemon, $0) != nil }
    }
  }

  /// A daemon and a secure source that copied `text` to `selections`.
  func start(policy: String, text: String = secret, selections: [String] = ["CLIPBOARD"], secure: Bool = true)
    async throws -> (XvfbServer, DaemonProcess, CopySource)
  {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    let source = try CopySource(display: server.display, secure: secure, text: text)
    if secure {
      try await waitUntil("the source window is secure") {
        (try daemon.state())?.windows.contains { $0.id == source.window && $0.secure } ?? false
      }
    }
    try source.copy(to: selections)
    return (server, daemon, source)
  }

  @Test("a background reader gets nothing and the refusal is audited with its executable")
  func backgroundRefused() async throws {
    let (server, daemon, source) = try await start(policy: "{version: 1}")
    try await waitGuarded(daemon, ["CLIPBOARD"])
    let other = try await focusElsewhere(server)
    let r = try await server.run("xclip", ["-o", "-selection", "clipboard"], timeout: .seconds(10))
    #expect(r.stdoutText.isEmpty)
    #expect(!r.stdoutText.contains("correct-horse"))
    let refused = daemon.auditEvents("clipboard-read-refused")
    #expect(refused.contains { ($0["exe"] as? String)?.hasSuffix("/xclip") == true }, "\(daemon.audit)")
    #expect(daemon.auditEvents("clipboard-guard").count == 1)
    #expect(!String(decoding: daemon.process.stderr, as: UTF8.self).contains("correct-horse"))
    try await waitUntil("the refusal is counted") { (try guarded(daemon, "CLIPBOARD")?.readsRefused ?? 0) >= 1 }
    #expect(try guarded(daemon, "CLIPBOARD")?.readsServed == 0)
    other.close()
    source.stop()
    await daemon.stop()
    await server.stop()
  }

  @Test(
    "the focused reader gets the exact text (non-ASCII; larger than the maximum request size: INCR)",
    arguments: [("CLIPBOARD", false), ("PRIMARY", false), ("CLIPBOARD", true)])
  func focusedServed(selection: String, large: Bool) async throws {
    let text = large ? String(repeating: Self.secret + "\n", count: 20_000) : Self.secret  // ~700 KB
    let (server, daemon, source) = try await start(policy: "{version: 1}", text: text, selections: [selection])
    try await waitGuarded(daemon, [selection])
    #expect(try guarded(daemon, selection)?.size == text.utf8.count)
    let got = try readSelection(display: server.display, selection, focus: true)
    #expect(got.map { String(decoding: $0.data, as: UTF8.self) == text } == true, "got \(got?.data.count ?? -1) bytes")
    #expect(daemon.auditEvents("clipboard-read").count == 1)
    source.stop()
    await daemon.stop()
    #expect(daemon.auditEvents("clipboard-clear").contains { $0["why"] as? String == "daemon exit" })
    await server.stop()
  }

  @Test("an allowed clipboard manager sees the concealed hint")
  func allowedManagerSeesHint() async throws {
    let (server, daemon, source) = try await start(policy: #"{version: 1, clipboard: {allow: [{exe: "*/xclip"}]}}"#)
    try await waitGuarded(daemon, ["CLIPBOARD"])
    let other = try await focusElsewhere(server)
    let targets = try await server.run("xclip", ["-o", "-selection", "clipboard", "-t", "TARGETS"])
    #expect(targets.stdoutText.contains("x-kde-passwordManagerHint"), "\(targets)")
    let hint = try await server.run("xclip", ["-o", "-selection", "clipboard", "-t", "x-kde-passwordManagerHint"])
    #expect(hint.stdoutText == "secret")
    let text = try await server.run("xclip", ["-o", "-selection", "clipboard"])
    #expect(text.stdoutText == Self.secret)
    other.close()
    source.stop()
    await daemon.stop()
    await server.stop()
  }

  @Test("after clearAfter nobody gets the text; clipboard clear and status work")
  func clearAfter() async throws {
    let (server, daemon, source) = try await start(
      policy: #"{version: 1, clipboard: {clearAfter: "1s"}}"#, selections: ["CLIPBOARD", "PRIMARY"])
    try await waitGuarded(daemon, ["CLIPBOARD", "PRIMARY"])
    let status = try await Shieldctl.run(["clipboard", "status"], on: server)
    #expect(status.stdoutText.contains("CLIPBOARD: guarded"), "\(status)")
    #expect(!status.stdoutText.contains("correct-horse"))
    try await Task.sleep(for: .milliseconds(1500))
    #expect(try readSelection(display: server.display, "CLIPBOARD", focus: true) == nil)
    #expect(try readSelection(display: server.display, "PRIMARY", focus: true) == nil)
    #expect(daemon.auditEvents("clipboard-clear").count == 2)
    #expect(try daemon.state()?.clipboard?.guarded.isEmpty == true)
    // Copy again, then clear by command.
    try source.copy(to: ["CLIPBOARD"])
    try await waitGuarded(daemon, ["CLIPBOARD"])
    let clear = try await Shieldctl.run(["clipboard", "clear"], on: server)
    #expect(clear.status == .exited(0))
    try await waitUntil("cleared by command") { try daemon.state()?.clipboard?.guarded.isEmpty == true }
    #expect(daemon.auditEvents("clipboard-clear").contains { $0["why"] as? String == "clear command" })
    source.stop()
    await daemon.stop()
    await server.stop()
  }

  @Test("copies from non-secure windows are untouched")
  func nonSecureUntouched() async throws {
    let (server, daemon, source) = try await start(policy: "{version: 1}", secure: false)
    // The positive marker: a secure source copies to PRIMARY after the plain copy to
    // CLIPBOARD; once that copy is guarded, the daemon has handled the CLIPBOARD one too.
    let marker = try CopySource(display: server.display, secure: true, text: "marker")
    try await waitUntil("the marker window is secure") {
      (try daemon.state())?.windows.contains { $0.id == marker.window && $0.secure } ?? false
    }
    try marker.copy(to: ["PRIMARY"])
    try await waitGuarded(daemon, ["PRIMARY"])
    let r = try await server.run("xclip", ["-o", "-selection", "clipboard"], timeout: .seconds(10))
    #expect(r.stdoutText == Self.secret)
    #expect(daemon.auditEvents("clipboard-guard").filter { $0["selection"] as? String != "PRIMARY" }.isEmpty)
    #expect(try daemon.state()?.clipboard?.guarded.allSatisfy { $0.selection == "PRIMARY" } == true)
    marker.stop()
    source.stop()
    await daemon.stop()
    await server.stop()
  }
}
