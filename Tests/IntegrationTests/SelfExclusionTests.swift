// Stale self-exclusion: another client KillClients one of the
// daemon's own connections. The X server hands that connection's resource base to the next
// client that connects; a daemon that still counts the base as its own drops that client's
// capture requests unseen. Each test kills one connection, makes sure the next client really
// got the killed base, and has that client capture: audited with its executable, at most the
// first frame leaks (the bound without quarantine), and what the kill took is back.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("A daemon connection killed by another client", .serialized, .timeLimit(.minutes(4)))
struct SelfExclusionTests {
  static let rect = PixelRect(x: 100, y: 100, width: 200, height: 150)
  /// The default policy but a short linger, to keep the test fast.
  static let policy = "{version: 1, capture: {linger: \"300ms\"}}"
  static let frames = 20

  /// The red secure window, and a daemon that has decided it is secure.
  static func setUp(policy: String = Self.policy) async throws -> (XvfbServer, TestWindow, DaemonProcess) {
    let server = try await XvfbServer.start()
    let window = try await TestWindow.open(on: server, rect: Self.rect, color: .red, secure: true)
    let daemon = try await DaemonProcess.start(on: server, policy: policy)
    try await waitUntil("the daemon decides the window is secure", timeout: .seconds(10)) {
      try daemon.state()?.windows.contains { $0.id == window.id && $0.secure } ?? false
    }
    return (server, window, daemon)
  }

  static func resourceMask(_ c: TestXConnection) -> UInt32 { xcb_get_setup(c.raw).pointee.resource_id_mask }

  static func children(of window: UInt32, _ c: TestXConnection) throws -> [UInt32] {
    let tree = try #require(xcb_query_tree_reply(c.raw, xcb_query_tree(c.raw, window), nil))
    defer { free(tree) }
    return Array(UnsafeBufferPointer(start: xcb_query_tree_children(tree), count: Int(tree.pointee.children_len)))
  }

  static func name(of window: UInt32, _ c: TestXConnection) -> String? {
    guard
      let r = xcb_get_property_reply(
        c.raw, xcb_get_property(c.raw, 0, window, XCB_ATOM_WM_NAME.rawValue, XCB_ATOM_STRING.rawValue, 0, 64), nil)
    else { return nil }
    defer { free(r) }
    let n = Int(xcb_get_property_value_length(r))
    guard n > 0, let p = xcb_get_property_value(r) else { return nil }
    return String(decoding: UnsafeRawBufferPointer(start: p, count: n), as: UTF8.self)
  }

  /// The copied-text guard's window (a top-level of the daemon's named so).
  static func clipboardGuardWindows(_ c: TestXConnection) throws -> [UInt32] {
    try children(of: c.root, c).filter { name(of: $0, c) == "CaptureShield clipboard guard" }
  }

  /// The attack: with the daemon stopped (so it cannot reconnect first and take the base
  /// back), KillClient `resource`'s owner, then connect: the new client gets the killed
  /// connection's base (checked). Then the daemon runs again, and the test waits until it
  /// has handled what came before (a positive marker). Returns the new client.
  /// In `failMode: "closed"` the shield connection is `RetainPermanent`: the first
  /// KillClient closes it and keeps its windows (and its base); a second one (`twice`)
  /// destroys them and frees the base.
  static func killAndTakeBase(
    _ resource: UInt32, server: XvfbServer, daemon: DaemonProcess, window: TestWindow, twice: Bool = false
  ) async throws -> TestXConnection {
    let attacker = try server.connect()
    defer { attacker.disconnect() }
    let killedBase = resource & ~resourceMask(attacker)
    daemon.signal(SIGSTOP)
    try await waitUntil("the daemon is stopped", timeout: .seconds(5)) { processState(daemon.process.pid) == "T" }
    try attacker.check(xcb_kill_client_checked(attacker.raw, resource), "KillClient")
    if twice { try attacker.check(xcb_kill_client_checked(attacker.raw, resource), "KillClient (retained)") }
    // The server hands out the lowest free client slot: a lower one freed earlier (a
    // short-lived connection, ours or the daemon's) is taken first. Those are filled and
    // held until a connection gets the killed base.
    var fillers: [TestXConnection] = []
    defer { for f in fillers { f.disconnect() } }
    var next = try server.connect()
    while next.generateID() & ~resourceMask(next) != killedBase, fillers.count < 64 {
      fillers.append(next)
      next = try server.connect()
    }
    let base = next.generateID() & ~resourceMask(next)
    #expect(base == killedBase, "the next client got base \(hex(base)), not the killed \(hex(killedBase))")
    daemon.signal(SIGCONT)
    try await daemon.waitUntilCaughtUp(retitling: window)
    return next
  }

  /// The new client captures `frames` frames (GetImage of the root), kept connected; after
  /// the first, it waits (without failing) until the daemon shields the window. Returns the
  /// secret pixels per frame.
  static func capture(_ c: TestXConnection, daemon: DaemonProcess, window: TestWindow) async throws -> [Int] {
    var leaked: [Int] = []
    for frame in 0..<frames {
      leaked.append(try c.getImage(of: c.root).count(of: .red, in: rect))
      if frame == 0 {
        // Not part of the attack: the first frame races the shields (no quarantine).
        do { try await daemon.waitShielded(window.id, timeout: .seconds(5)) } catch { /* counted below */  }
      }
    }
    return leaked
  }

  /// What every test asserts about the new client's capture: at most the first frame
  /// leaked, and a request session audited with this process's executable and the base.
  static func expectAuditedCapture(_ leaked: [Int], daemon: DaemonProcess, base: UInt32, _ what: String) throws {
    let leakedFrames = leaked.filter { $0 > 0 }.count
    print("\(what): \(leakedFrames) of \(leaked.count) frames leaked (secret pixels per frame: \(leaked))")
    #expect(leaked.dropFirst().allSatisfy { $0 == 0 }, "secret pixels per frame: \(leaked)")
    let starts = daemon.auditEvents("session-start").filter {
      $0["kind"] as? String == "request" && $0["client"] as? String == hex(base)
    }
    let exe = try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")
    #expect(starts.count == 1, "\(daemon.auditEvents("session-start"))")
    #expect(starts.first?["exe"] as? String == exe, "\(starts)")
    #expect(starts.first?["pid"] as? Int == Int(getpid()), "\(starts)")
  }

  @Test(
    "the shield connection killed: the client that gets its base is seen and audited; shields back",
    arguments: [FailMode.open, .closed])
  func shieldConnectionKilled(_ mode: FailMode) async throws {
    let policy = "{version: 1, capture: {linger: \"300ms\"}, shield: {failMode: \"\(mode.rawValue)\"}}"
    let (server, window, daemon) = try await Self.setUp(policy: policy)
    // Reveal the shield connection: one capture by a probe puts a shield up in the window.
    let probe = try server.connect()
    _ = try probe.getImage(of: probe.root)
    try await daemon.waitShielded(window.id)
    let shield = try #require(try Self.children(of: window.id, probe).first)
    let shieldBase = shield & ~Self.resourceMask(probe)
    probe.disconnect()
    try await daemon.waitShielded(window.id, false)

    let next = try await Self.killAndTakeBase(
      shield, server: server, daemon: daemon, window: window, twice: mode == .closed)
    #expect(
      daemon.auditEvents("connection-killed").contains {
        $0["connection"] as? String == "shield" && $0["client"] as? String == hex(shieldBase)
      }, "\(daemon.audit)")
    let leaked = try await Self.capture(next, daemon: daemon, window: window)
    try Self.expectAuditedCapture(leaked, daemon: daemon, base: shieldBase, "shield connection killed (\(mode))")

    // Shields back, from a new connection: the window is shielded by a shield not of the
    // killed base, and a screenshot shows no secret pixel.
    #expect(daemon.isShielded(window.id))
    let shields = try Self.children(of: window.id, next).filter { $0 & ~Self.resourceMask(next) != shieldBase }
    #expect(!shields.isEmpty)
    #expect(try next.getImage(of: next.root).count(of: .red, in: Self.rect) == 0)
    next.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("closed mode, one KillClient: the retained shield is adopted by the new shield connection and guarded")
  func retainedShieldAdopted() async throws {
    let policy = "{version: 1, shield: {when: \"always\", failMode: \"closed\"}}"
    let (server, window, daemon) = try await Self.setUp(policy: policy)
    try await daemon.waitShielded(window.id)
    let attacker = try server.connect()
    let shield = try #require(try Self.children(of: window.id, attacker).first)
    try attacker.check(xcb_kill_client_checked(attacker.raw, shield), "KillClient")
    try await waitUntil("the daemon audits the killed shield connection", timeout: .seconds(10)) {
      !daemon.auditEvents("connection-killed").isEmpty
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    // Adopted, not duplicated: the same window, alone, in the registry.
    #expect(try Self.children(of: window.id, attacker) == [shield])
    #expect(try rootCardinals("_CAPTURE_SHIELD_SHIELDS", on: server) == [shield, window.id])
    // Guarded by the new connection: unmapping it is repaired.
    let tampered = daemon.auditEvents("shield-tampered").count
    try attacker.check(xcb_unmap_window_checked(attacker.raw, shield), "UnmapWindow")
    try await waitUntil("the daemon repairs the adopted shield", timeout: .seconds(10)) {
      daemon.auditEvents("shield-tampered").count > tampered
    }
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(try attacker.getImage(of: attacker.root).count(of: .red, in: Self.rect) == 0)
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the copied-text guard's connection killed: its base's next holder is audited; the guard is back")
  func clipboardGuardKilled() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let look = try server.connect()
    let guardWindow = try #require(try Self.clipboardGuardWindows(look).first)
    let guardBase = guardWindow & ~Self.resourceMask(look)
    look.disconnect()

    let next = try await Self.killAndTakeBase(guardWindow, server: server, daemon: daemon, window: window)
    #expect(
      daemon.auditEvents("connection-killed").contains {
        $0["connection"] as? String == "clipboard" && $0["client"] as? String == hex(guardBase)
      }, "\(daemon.audit)")
    let leaked = try await Self.capture(next, daemon: daemon, window: window)
    try Self.expectAuditedCapture(leaked, daemon: daemon, base: guardBase, "clipboard guard connection killed")

    // The guard is back: a new guard window (another base), and a secure app's copy is
    // taken over by it.
    let again = try Self.clipboardGuardWindows(next)
    #expect(again.contains { $0 & ~Self.resourceMask(next) != guardBase }, "guard windows: \(again.map(hex))")
    let source = try CopySource(display: server.display, secure: true, text: "correct-horse")
    try await waitUntil("the source window is secure") {
      (try daemon.state())?.windows.contains { $0.id == source.window && $0.secure } ?? false
    }
    try source.copy(to: ["CLIPBOARD"])
    try await waitUntil("the daemon guards CLIPBOARD again", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.contains { $0.selection == "CLIPBOARD" && $0.state == "guarded" } ?? false
    }
    source.stop()
    next.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }

  @Test("the main connection killed: audited, and the daemon exits 69 for the service manager to restart it")
  func mainConnectionKilled() async throws {
    let (server, window, daemon) = try await Self.setUp()
    let attacker = try server.connect()
    let manager = try attacker.selectionOwner("_CAPTURE_SHIELD_S0")
    try #require(manager != 0)
    try attacker.check(xcb_kill_client_checked(attacker.raw, manager), "KillClient")
    try await waitUntil("the daemon exits", timeout: .seconds(10)) { !daemon.process.isRunning }
    let result = await daemon.stop()
    #expect(result.status == .exited(69), "\(result.status)")
    #expect(
      daemon.auditEvents("connection-killed").contains { $0["connection"] as? String == "main" }, "\(daemon.audit)")
    attacker.disconnect()
    window.close()
    await server.stop()
  }

  /// The resource-id bases of the clients of process `pid` (X-Resource QueryClientIds).
  static func bases(ofProcess pid: Int32, _ c: TestXConnection) throws -> [UInt32] {
    var spec = xcb_res_client_id_spec_t(client: 0, mask: UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue))
    let reply = try c.ownedReply("XResQueryClientIds") {
      xcb_res_query_client_ids_reply(c.raw, xcb_res_query_client_ids(c.raw, 1, &spec), $0)
    }
    defer { free(reply) }
    var out: [UInt32] = []
    var it = xcb_res_query_client_ids_ids_iterator(reply)
    while it.rem > 0 {
      if xcb_res_client_id_value_value_length(it.data) == 1,
        xcb_res_client_id_value_value(it.data)!.pointee == UInt32(pid)
      {
        out.append(it.data.pointee.spec.client)
      }
      xcb_res_client_id_value_next(&it)
    }
    return out.sorted()
  }

  @Test("the tag watch's RECORD connection killed: a new one takes over; another client's untag is still put back")
  func tagWatchKilled() async throws {
    // (No keyboard watch: its RECORD context would come after the tag watch's.)
    let policy =
      "{version: 1, shield: {when: \"always\"}, clipboard: {enabled: false}, keyloggers: {enabled: false}}"
    let (server, window, daemon) = try await Self.setUp(policy: policy)
    try await daemon.waitShielded(window.id)
    let attacker = try server.connect()
    // The daemon's RECORD contexts: the capture detector's, then the tag watch's (created
    // last at start). Each is the first resource of its control connection (base | 1).
    let recording = try Self.bases(ofProcess: daemon.process.pid, attacker).filter { base in
      try attacker.resourceTypes(ofClientOwning: base).keys.contains { $0.lowercased().contains("record") }
    }
    #expect(recording.count == 2, "\(recording.map(hex))")
    let tagWatchBase = try #require(recording.last)
    try attacker.check(xcb_kill_client_checked(attacker.raw, tagWatchBase | 1), "KillClient(tag watch)")
    try await waitUntil("the daemon audits the killed tag watch", timeout: .seconds(10)) {
      daemon.auditEvents("connection-killed").contains { $0["connection"] as? String == "tag watch" }
    }
    let killed = try #require(
      daemon.auditEvents("connection-killed").first { $0["connection"] as? String == "tag watch" })
    #expect(killed["client"] as? String == hex(tagWatchBase), "\(killed)")
    #expect((killed["action"] as? String)?.hasPrefix("reconnected") == true, "\(killed)")
    try await daemon.waitUntilCaughtUp(retitling: window)
    // Another client deletes the tag: put back, and the deleter named (RECORD again).
    let tag = try attacker.internAtom("_CAPTURE_SHIELD_SECURE")
    try attacker.check(xcb_delete_property_checked(attacker.raw, window.id, tag), "DeleteProperty")
    try await waitUntil("tag-tampered audited", timeout: .seconds(10)) { !daemon.auditEvents("tag-tampered").isEmpty }
    let record = try #require(daemon.auditEvents("tag-tampered").first)
    let attackerBase = xcb_get_setup(attacker.raw).pointee.resource_id_base
    #expect(record["client"] as? String == hex(attackerBase), "\(record)")
    try await daemon.waitUntilCaughtUp(retitling: window)
    #expect(daemon.isShielded(window.id))
    #expect(try attacker.getImage(of: attacker.root).count(of: .red, in: Self.rect) == 0)
    attacker.disconnect()
    await daemon.stop()
    window.close()
    await server.stop()
  }
}
