// The copied-text guard against a spoofed requestor: a background client sends ConvertSelection naming another
// client's focused window as the requestor, then reads the property back from that window
// (any client may read any window's properties). The guard must refuse it, whatever the
// target, and audit the client that sent it, not the window's owner.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

/// Reads `property` of `window` (nil: no such property). Never deletes it.
private func propertyValue(_ x: TestXConnection, _ window: xcb_window_t, _ property: xcb_atom_t) throws -> [UInt8]? {
  let r = try x.ownedReply("GetProperty") { e in
    xcb_get_property_reply(x.raw, xcb_get_property(x.raw, 0, window, property, 0, 0, 1 << 20), e)
  }
  defer { free(r) }
  guard r.pointee.type != 0 else { return nil }
  let n = Int(xcb_get_property_value_length(r))
  guard n > 0, let p = xcb_get_property_value(r) else { return [] }
  return Array(UnsafeRawBufferPointer(start: p, count: n))
}

/// A reader converting CLIPBOARD (UTF8_STRING) into a window of its own, focused: the
/// text, or nil when refused.
private func focusedRead(display: String) throws -> String? {
  let reader = try PasteTarget(display: display, x: 200, y: 10)
  defer { reader.close() }
  return try reader.read()
}

@Suite("Copied-text guard against a spoofed requestor", .serialized, .timeLimit(.minutes(3)))
struct ClipboardSpoofTests {
  static let secret = "spoofed pässwörd 🔑 correct-horse-battery"
  /// The attacker converts each of these, into a property of its own naming, on the victim's window.
  static let targets = ["TARGETS", "x-kde-passwordManagerHint", "TIMESTAMP", "UTF8_STRING"]

  @Test(
    "a client converting into another client's focused window gets nothing, whatever the target; the refusal names its executable; the focused reader still gets the text"
  )
  func spoofedRequestor() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let source = try CopySource(display: server.display, secure: true, text: Self.secret)
    try await waitUntil("the source window is secure") {
      (try daemon.state())?.windows.contains { $0.id == source.window && $0.secure } ?? false
    }
    try source.copy(to: ["CLIPBOARD"])
    try await waitUntil("the daemon guards CLIPBOARD", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.contains { $0.selection == "CLIPBOARD" && $0.state == "guarded" } == true
    }

    // The victim: another program (shieldctl test-window), whose window has the focus.
    let victim = try server.startBackground(
      Shieldctl.path, ["test-window", "--print-id", "--geometry", "60x60+400+300", "--color", "00ff00"])
    try await waitUntil("the victim prints its window id", timeout: .seconds(10)) {
      String(decoding: victim.stdout, as: UTF8.self).hasSuffix("\n")
    }
    let idText = String(decoding: victim.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    let victimWindow = try #require(UInt32(idText.dropFirst(2), radix: 16), "\(idText)")

    // The attacker: this process, a client of its own that owns no window.
    let attacker = try server.connect()
    defer { attacker.disconnect() }
    try await waitUntil("the victim's window is viewable") { try server.geometry(of: victimWindow).isViewable }
    try attacker.check(
      xcb_set_input_focus_checked(attacker.raw, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), victimWindow, 0),
      "SetInputFocus")
    let clipboard = try attacker.internAtom("CLIPBOARD")
    var properties: [xcb_atom_t] = []
    for (i, t) in Self.targets.enumerated() {
      let p = try attacker.internAtom("CS_SPOOF_\(i)")
      properties.append(p)
      xcb_convert_selection(attacker.raw, victimWindow, clipboard, try attacker.internAtom(t), p, 0)
    }
    try attacker.sync()
    // The guard answers in order; the text request is the last and is audited on every build.
    try await waitUntil("the daemon has answered the text request", timeout: .seconds(10)) {
      (daemon.auditEvents("clipboard-read") + daemon.auditEvents("clipboard-read-refused")).contains {
        ($0["target"] as? String ?? "text") == "text"
      }
    }
    // The focused reader, converting into its own window, is served. Its answer comes on
    // the guard's connection after anything the guard wrote for the attacker's requests.
    let legit = try focusedRead(display: server.display)
    #expect(legit == Self.secret)

    // The attacker reads what the guard wrote on the victim's window: nothing.
    for (t, p) in zip(Self.targets, properties) {
      let value = try propertyValue(attacker, victimWindow, p)
      #expect(value == nil, "\(t): the attacker read \(value?.count ?? 0) bytes from the victim's window")
      #expect(!String(decoding: value ?? [], as: UTF8.self).contains("correct-horse"), "\(t)")
    }

    // Audited with the attacker's executable and client, naming the victim's as the requestor.
    let testExe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    let mask = xcb_get_setup(attacker.raw).pointee.resource_id_mask
    let attackerClient = hex(attacker.generateID() & ~mask)
    let victimClient = hex(victimWindow & ~mask)
    let refused = daemon.auditEvents("clipboard-read-refused")
    #expect(refused.count == Self.targets.count, "\(refused)")
    for r in refused {
      #expect(r["exe"] as? String == testExe, "\(r)")
      #expect(r["pid"] as? Int == Int(getpid()), "\(r)")
      #expect(r["reader"] as? String == attackerClient, "\(r)")
      #expect(r["requestorClient"] as? String == victimClient, "\(r)")
    }
    let reads = daemon.auditEvents("clipboard-read")
    let victimExe = URL(fileURLWithPath: Shieldctl.path).resolvingSymlinksInPath().path
    #expect(!reads.contains { $0["exe"] as? String == victimExe }, "the victim was named as the reader: \(reads)")
    #expect(reads.count == 1 && reads.first?["exe"] as? String == testExe, "\(reads)")
    #expect(!String(decoding: daemon.process.stderr, as: UTF8.self).contains("correct-horse"))

    source.stop()
    await victim.stop()
    await daemon.stop()
    await server.stop()
  }

  @Test("without RECORD nobody can be told from a spoofer: even the focused reader is refused, and that is audited")
  func noRecordFailsSafe() async throws {
    let server = try await XvfbServer.start(extraArguments: ["-extension", "RECORD"])
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1}")
    let source = try CopySource(display: server.display, secure: true, text: Self.secret)
    try await waitUntil("the source window is secure") {
      (try daemon.state())?.windows.contains { $0.id == source.window && $0.secure } ?? false
    }
    try source.copy(to: ["CLIPBOARD"])
    try await waitUntil("the daemon guards CLIPBOARD", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.contains { $0.selection == "CLIPBOARD" && $0.state == "guarded" } == true
    }
    #expect(try focusedRead(display: server.display) == nil)
    let refused = daemon.auditEvents("clipboard-read-refused")
    #expect(
      refused.count == 1 && refused.first?["why"] as? String == "sender unknown (RECORD unavailable)", "\(refused)")
    #expect(daemon.auditEvents("clipboard-read").isEmpty)
    source.stop()
    await daemon.stop()
    await server.stop()
  }
}
