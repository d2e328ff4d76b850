// Client-side mode against an attacker on the same display: each test is an attack by a client of our own on a real Xvfb, and
// what the daemon must do about it.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Attacks on the client-side daemon", .serialized, .timeLimit(.minutes(4)))
struct AttackTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)

  @Test("taking the manager selection does not end protection: audited, taken back, status checks the owner")
  func managerSelectionTaken() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)

    // The attacker: one SetSelectionOwner on _CAPTURE_SHIELD_S0.
    let attacker = try server.connect()
    let selection = try attacker.internAtom("_CAPTURE_SHIELD_S0")
    let w = attacker.generateID()
    try attacker.check(
      xcb_create_window_checked(
        attacker.raw, 0, w, attacker.root, 0, 0, 1, 1, 0, UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue), 0, 0, nil),
      "CreateWindow")
    try attacker.check(xcb_set_selection_owner_checked(attacker.raw, w, selection, 0), "SetSelectionOwner")
    try await waitUntil("the daemon audits the taken selection", timeout: .seconds(10)) {
      !daemon.auditEvents("manager-selection-taken").isEmpty
    }
    let record = try #require(daemon.auditEvents("manager-selection-taken").first)
    #expect(record["pid"] as? Int == Int(getpid()), "\(record)")
    try await waitUntil("the daemon owns its selection again", timeout: .seconds(10)) {
      try attacker.selectionOwner("_CAPTURE_SHIELD_S0") != w
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.process.isRunning)
    #expect(daemon.isShielded(window.id))
    let shot = try await Capture.xwdRoot(on: server)
    #expect(shot.count(of: .red, in: Self.rect) == 0)
    let status = try await Shieldctl.run(["status"], on: server)
    #expect(status.status == .exited(0), "\(status.stdoutText)")

    // Stopped: status says so and fails; an impostor holding the selection meanwhile too.
    daemon.signal(SIGSTOP)
    try await waitUntil("the daemon is stopped", timeout: .seconds(5)) { processState(daemon.process.pid) == "T" }
    let stopped = try await Shieldctl.run(["status"], on: server)
    #expect(stopped.status == .exited(1))
    #expect(
      stopped.stdoutText.contains("NOT PROTECTING") && stopped.stdoutText.contains("stopped"), "\(stopped.stdoutText)")
    try attacker.check(xcb_set_selection_owner_checked(attacker.raw, w, selection, 0), "SetSelectionOwner")
    let impostor = try await Shieldctl.run(["status", "--json"], on: server)
    #expect(impostor.status == .exited(1))
    #expect(impostor.stdoutText.contains("held by pid \(getpid())"), "\(impostor.stdoutText)")
    daemon.signal(SIGCONT)
    try await waitUntil("the daemon owns its selection again", timeout: .seconds(10)) {
      try attacker.selectionOwner("_CAPTURE_SHIELD_S0") != w
    }
    let healthy = try await Shieldctl.run(["status"], on: server)
    #expect(healthy.status == .exited(0), "\(healthy.stdoutText)")
    await daemon.stop()
    window.close()
    await server.stop()
  }

  /// Sends `event` (32 bytes) as another client can: SendEvent to the root's
  /// SubstructureNotify listeners (the daemon), the server sets bit 7 of its type.
  static func forge(_ x: TestXConnection, _ event: [UInt8]) throws {
    var bytes = event
    try bytes.withUnsafeMutableBytes { b in
      try x.check(
        xcb_send_event_checked(
          x.raw, 0, x.root, XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue,
          b.baseAddress!.assumingMemoryBound(to: CChar.self)),
        "SendEvent")
    }
  }

  /// A DestroyNotify (type 17) or UnmapNotify (18) of `window` as the root's listeners get it.
  static func structureEvent(_ type: UInt8, root: UInt32, window: UInt32) -> [UInt8] {
    var b = [UInt8](repeating: 0, count: 32)
    b[0] = type
    withUnsafeBytes(of: root.littleEndian) { b.replaceSubrange(4..<8, with: $0) }
    withUnsafeBytes(of: window.littleEndian) { b.replaceSubrange(8..<12, with: $0) }
    return b
  }

  @Test(
    "forged window events (SendEvent DestroyNotify/UnmapNotify of a secure window) do not make the daemon forget it")
  func forgedWindowEvents() async throws {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: "{version: 1, shield: {when: \"always\"}}")
    try await daemon.waitShielded(window.id)

    // The attacker: a forged DestroyNotify and UnmapNotify of the secure window, then it
    // unmaps the shield (which the daemon repairs while it guards the window).
    let attacker = try server.connect()
    try Self.forge(attacker, Self.structureEvent(17, root: attacker.root, window: window.id))
    try Self.forge(attacker, Self.structureEvent(18, root: attacker.root, window: window.id))
    try await daemon.waitUntilCaughtUp()
    let tree = try #require(xcb_query_tree_reply(attacker.raw, xcb_query_tree(attacker.raw, window.id), nil))
    let children = Array(
      UnsafeBufferPointer(start: xcb_query_tree_children(tree), count: Int(tree.pointee.children_len)))
    free(tree)
    #expect(!children.isEmpty, "no shield inside the secure window")
    for shield in children { try attacker.check(xcb_unmap_window_checked(attacker.raw, shield), "UnmapWindow") }
    // The daemon still guards the window: it maps the shield again.
    func shieldMapped() -> Bool {
      children.contains { shield in
        guard
          let a = xcb_get_window_attributes_reply(attacker.raw, xcb_get_window_attributes(attacker.raw, shield), nil)
        else { return false }
        defer { free(a) }
        return a.pointee.map_state == UInt8(XCB_MAP_STATE_VIEWABLE.rawValue)
      }
    }
    do {
      try await waitUntil("the shield mapped again", timeout: .seconds(10)) { shieldMapped() }
    } catch {
      let shot = try await Capture.xwdRoot(on: server)
      Issue.record("the daemon forgot the window: \(shot.count(of: .red, in: Self.rect)) secret pixels in xwd")
      throw error
    }
    #expect(daemon.isShielded(window.id))
    let shot = try await Capture.xwdRoot(on: server)
    #expect(shot.count(of: .red, in: Self.rect) == 0)
    #expect(!daemon.auditEvents("forged-event").isEmpty, "the forgery is audited")
    await daemon.stop()
    window.close()
    await server.stop()
  }
}
