import Testing

@testable import CaptureShield

/// The command channel's pure parts: where the socket lives, who may send commands, the
/// wire form (`CommandChannel`, `CommandWire`).
@Suite("command channel: socket path, sender check, wire form")
struct CommandChannelTests {
  @Test(
    "the socket directory: $XDG_RUNTIME_DIR/captureshield, else /tmp/captureshield-UID",
    arguments: [
      (["XDG_RUNTIME_DIR": "/run/user/1000"], "/run/user/1000/captureshield"),
      (["XDG_RUNTIME_DIR": "/run/user/1000/"], "/run/user/1000/captureshield"),
      (["XDG_RUNTIME_DIR": "relative/dir"], "/tmp/captureshield-1000"),
      (["XDG_RUNTIME_DIR": ""], "/tmp/captureshield-1000"),
      ([:], "/tmp/captureshield-1000"),
    ])
  func directory(environment: [String: String], expected: String) {
    #expect(CommandChannel.directory(environment: environment, uid: 1000) == expected)
  }

  @Test(
    "one socket name per display and screen, however the display is spelled",
    arguments: [
      (":1", 0, "display-:1.0"),
      (":1.0", 0, "display-:1.0"),
      ("unix:1", 0, "display-:1.0"),
      (":1.1", 1, "display-:1.1"),
      ("localhost:10.0", 0, "display-localhost:10.0"),
      ("host/../x:3", 0, "display-x:3.0"),
      ("/tmp/launch-abc/org.x:0", 0, "display-org.x:0.0"),
      ("::1:2", 0, "display-__1:2.0"),
      (":bad", 0, "display-:_.0"),
    ])
  func socketName(display: String, screen: Int, expected: String) {
    #expect(CommandChannel.socketName(display: display, screen: screen) == expected)
  }

  static let daemonExe = "/usr/bin/shieldctl"

  @Test(
    "accepted: the daemon's user running the daemon's own program (same path or same file); else refused",
    arguments: [
      (CommandChannel.Peer(pid: 10, uid: 1000, exe: "/usr/bin/shieldctl"), false, true),
      (CommandChannel.Peer(pid: 10, uid: 1000, exe: "/usr/bin/shieldctl (deleted)"), false, true),
      (CommandChannel.Peer(pid: 10, uid: 1000, exe: "/home/u/bin/shieldctl"), true, true),  // a hard link
      (CommandChannel.Peer(pid: 10, uid: 1000, exe: "/home/u/bin/shieldctl"), false, false),  // a copy
      (CommandChannel.Peer(pid: 10, uid: 1000, exe: "/usr/bin/python3"), false, false),
      (CommandChannel.Peer(pid: 10, uid: 1000, exe: nil), false, false),
      (CommandChannel.Peer(pid: 10, uid: 1001, exe: "/usr/bin/shieldctl"), true, false),  // another user
      (CommandChannel.Peer(pid: 10, uid: 0, exe: "/usr/bin/shieldctl"), true, false),  // root is another user too
    ])
  func refusal(peer: CommandChannel.Peer, sameFile: Bool, accepted: Bool) {
    let why = CommandChannel.refusal(peer: peer, daemonUID: 1000, daemonExe: Self.daemonExe, sameFile: sameFile)
    #expect((why == nil) == accepted, "\(why ?? "accepted")")
  }

  @Test(
    "every command round-trips through its 20-byte wire form",
    arguments: [
      DaemonCommand.shield(0x120_0004), .unshield(0x80_0001), .pause(nil), .pause(.seconds(90)), .resume, .reload,
      .clipboardClear, .ping(nonce: 0xdead_beef), .untag(0x40_0001), .tag(0x40_0002), .titles,
    ])
  func wire(command: DaemonCommand) {
    let bytes = CommandWire.encode(command)
    #expect(bytes.count == 20)
    #expect(CommandWire.decode(bytes) == command)
  }

  @Test("a message of the wrong size or an unknown code is not a command")
  func malformed() {
    #expect(CommandWire.decode([]) == nil)
    #expect(CommandWire.decode([UInt8](repeating: 0, count: 20)) == nil)
    #expect(CommandWire.decode(Array(CommandWire.encode(.resume).dropLast())) == nil)
  }

  @Test("replies: ok, refused with a reason, anything else is a refusal naming it")
  func replies() {
    #expect(CommandChannel.Reply(wire: CommandChannel.Reply.ok.wire) == .ok)
    #expect(CommandChannel.Reply(wire: CommandChannel.Reply.refused("no").wire) == .refused("no"))
    #expect(CommandChannel.Reply(wire: Array("what".utf8)) == .refused("unreadable reply \"what\""))
  }

  @Test("the titles query: any program of the daemon's user, no other user")
  func queryRefusal() {
    #expect(
      CommandChannel.queryRefusal(peer: .init(pid: 9, uid: 1000, exe: "/usr/bin/python3"), daemonUID: 1000) == nil)
    #expect(
      CommandChannel.queryRefusal(peer: .init(pid: 9, uid: 1001, exe: "/usr/bin/shieldctl"), daemonUID: 1000) != nil)
  }

  @Test("titles: each window's title round-trips, a long one is cut on a character, the whole reply is bounded")
  func titles() {
    let titles: [WindowID: String] = [1: "Passwords", 0x40_0002: "Ünïcödé ✓", 3: ""]
    let wire = CommandChannel.Reply.titles(titles).wire
    #expect(wire.starts(with: Array("titles\n".utf8)))
    #expect(CommandChannel.Reply(wire: wire) == .titles(titles))
    let long = String(repeating: "é", count: 400)  // 800 bytes
    guard case .titles(let cut) = CommandChannel.Reply(wire: CommandChannel.Reply.titles([7: long]).wire) else {
      Issue.record("not titles")
      return
    }
    #expect(cut[7] == String(repeating: "é", count: CommandChannel.Reply.titleLimit / 2 - 1))
    let many = Dictionary(uniqueKeysWithValues: (0..<1000).map { (WindowID($0), String(repeating: "x", count: 500)) })
    let big = CommandChannel.Reply.titles(many).wire
    #expect(big.count <= CommandChannel.Reply.limit)
    guard case .titles(let some) = CommandChannel.Reply(wire: big) else {
      Issue.record("not titles")
      return
    }
    #expect(some.count == (CommandChannel.Reply.limit - 7) / 508)
    #expect(CommandChannel.Reply(wire: Array("titles\n".utf8) + [1, 0, 0, 0, 99, 0, 0, 0, 65]) == .titles([:]))
  }
}
