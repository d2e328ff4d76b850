import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

private let ownExe = "/usr/bin/shieldctl"
private func proc(
  _ pid: Int, started: Double, exe: String? = "/usr/bin/ffmpeg", loadsXCB: Bool? = true, display: String? = ":0",
  injection: String? = nil
) -> LaunchProcess {
  LaunchProcess(
    pid: pid, started: .seconds(started), exe: exe,
    comm: exe.map { String($0.split(separator: "/").last!.prefix(15)) }, loadsXCB: loadsXCB, display: display,
    injection: injection)
}

/// `capture.quarantineOnLaunch`: a quarantine that does not blank on launches of the daemon's own CLI or
/// of programs that cannot connect to this display.
@Suite("launches that cannot be clients of this display")
struct LaunchOverTests {
  struct DisplayCase: Sendable, CustomTestStringConvertible {
    var env: String?
    var ours: String?
    var another: Bool
    var testDescription: String { "\(env.map { "'\($0)'" } ?? "unreadable") vs \(ours ?? "nil")" }
  }

  @Test(
    "DISPLAY names another display",
    arguments: [
      DisplayCase(env: ":0", ours: ":0", another: false),
      DisplayCase(env: ":0.0", ours: ":0", another: false),
      DisplayCase(env: "unix:0", ours: ":0.0", another: false),
      DisplayCase(env: "localhost:0", ours: ":0", another: false),  // may be ours over TCP
      DisplayCase(env: "otherhost:0", ours: ":0", another: false),  // the host is not compared
      DisplayCase(env: "/tmp/launch-x/org.x:0", ours: ":0", another: false),
      DisplayCase(env: ":99", ours: ":0", another: true),
      DisplayCase(env: ":1.0", ours: ":10", another: true),
      DisplayCase(env: "", ours: ":0", another: true),  // unset: xcb_connect fails
      DisplayCase(env: "garbage", ours: ":0", another: true),
      DisplayCase(env: ":0x", ours: ":0", another: true),
      DisplayCase(env: nil, ours: ":0", another: false),  // unreadable: not known
      DisplayCase(env: ":5", ours: nil, another: false),  // ours not known
    ])
  func display(_ c: DisplayCase) {
    #expect(Engine.namesAnotherDisplay(c.env, ours: c.ours) == c.another)
  }

  struct OwnCase: Sendable, CustomTestStringConvertible {
    var name: String
    var exe: String?
    var injection: String?
    var own: String?
    var isOwn: Bool
    var testDescription: String { name }
  }

  @Test(
    "the daemon's own program",
    arguments: [
      OwnCase(name: "same exe", exe: "/usr/bin/shieldctl", injection: nil, own: "/usr/bin/shieldctl", isOwn: true),
      OwnCase(name: "another exe", exe: "/usr/bin/xwd", injection: nil, own: "/usr/bin/shieldctl", isOwn: false),
      OwnCase(
        name: "a copy elsewhere", exe: "/tmp/shieldctl", injection: nil, own: "/usr/bin/shieldctl", isOwn: false),
      OwnCase(
        name: "LD_PRELOAD", exe: "/usr/bin/shieldctl", injection: "LD_PRELOAD=/tmp/x.so", own: "/usr/bin/shieldctl",
        isOwn: false),
      OwnCase(
        name: "LD_LIBRARY_PATH (a libxcb of its own)", exe: "/usr/bin/shieldctl",
        injection: "LD_LIBRARY_PATH=/tmp/evil", own: "/usr/bin/shieldctl", isOwn: false),
      OwnCase(
        name: "traced", exe: "/usr/bin/shieldctl", injection: "traced by PID 9", own: "/usr/bin/shieldctl",
        isOwn: false),
      OwnCase(name: "exe unreadable", exe: nil, injection: nil, own: "/usr/bin/shieldctl", isOwn: false),
      OwnCase(name: "own program not known", exe: "/usr/bin/shieldctl", injection: nil, own: nil, isOwn: false),
    ])
  func own(_ c: OwnCase) {
    #expect(Engine.isOwnProgram(exe: c.exe, injection: c.injection, ownProgram: c.own) == c.isOwn)
  }

  struct OverCase: Sendable, CustomTestStringConvertible {
    var name: String
    var program: String?
    var processes: [LaunchProcess]
    var complete = true
    /// When the shell looked (the launch was seen at 10 s).
    var at: Double = 10.001
    var over: String?
    var testDescription: String { name }
  }

  @Test(
    "when a launch is over before any client connects",
    arguments: [
      OverCase(
        name: "shieldctl status (libxcb open)", program: nil,
        processes: [proc(1, started: 9.999, exe: ownExe)], over: "the daemon's own program"),
      OverCase(
        name: "shieldctl as a watched program", program: "shieldctl",
        processes: [proc(1, started: 9.999, exe: ownExe)], over: "the daemon's own program"),
      OverCase(
        name: "shieldctl under LD_PRELOAD is not ours", program: nil,
        processes: [proc(1, started: 9.999, exe: ownExe, injection: "LD_PRELOAD=/tmp/x.so")], over: nil),
      OverCase(
        name: "a copy of shieldctl elsewhere is not ours", program: nil,
        processes: [proc(1, started: 9.999, exe: "/tmp/shieldctl")], over: nil),
      OverCase(
        name: "ffmpeg of this display, decoding a file: kept (it may still connect)", program: "ffmpeg",
        processes: [proc(1, started: 9.999)], over: nil),
      OverCase(
        name: "ffmpeg of another display", program: "ffmpeg",
        processes: [proc(1, started: 9.999, display: ":7")], over: "another display"),
      OverCase(
        name: "a process without DISPLAY (a build, a cron job)", program: nil,
        processes: [proc(1, started: 9.999, display: "")], over: "another display"),
      OverCase(
        name: "environment unreadable (another user's process): kept", program: nil,
        processes: [proc(1, started: 9.999, display: nil)], over: nil),
      OverCase(
        name: "two candidates, one of this display: kept", program: nil,
        processes: [proc(1, started: 9.999, display: ":7"), proc(2, started: 9.998)], over: nil),
      OverCase(
        name: "own program and another display", program: nil,
        processes: [proc(1, started: 9.999, display: ":7"), proc(2, started: 9.998, exe: ownExe)],
        over: "another display and the daemon's own program"),
      OverCase(
        name: "no process (it exited), settled", program: "xwd", processes: [], at: 10.03, over: "process exited"),
      OverCase(name: "no process yet, not settled (an exec in progress)", program: "xwd", processes: [], over: nil),
      OverCase(
        name: "no process, but /proc hides processes (hidepid)", program: nil, processes: [], complete: false,
        at: 10.03, over: nil),
      OverCase(
        name: "the young process is another program: the launched one exited", program: "xwd",
        processes: [proc(1, started: 9.999)], at: 10.03, over: "process exited"),
      OverCase(
        name: "not libxcb's: the libxcb opener exited", program: nil,
        processes: [proc(1, started: 9.999, loadsXCB: false)], at: 10.03, over: "process exited"),
      OverCase(
        name: "maps unreadable counts as loading libxcb", program: nil,
        processes: [proc(1, started: 9.999, loadsXCB: nil)], at: 10.03, over: nil),
      OverCase(
        name: "started after the launch: not its process", program: nil,
        processes: [proc(1, started: 10.025, exe: ownExe)], at: 10.03, over: "process exited"),
      OverCase(
        name: "forked long before: not its process", program: nil,
        processes: [proc(1, started: 4, exe: ownExe)], at: 10.03, over: "process exited"),
      OverCase(
        name: "exe unreadable: matched by comm", program: "xwd",
        processes: [LaunchProcess(pid: 1, started: .seconds(9.999), comm: "xwd")], at: 10.03, over: nil),
    ])
  func over(_ c: OverCase) {
    let l = Engine.Launch(seen: .seconds(10), until: .seconds(10.3), program: c.program)
    #expect(
      Engine.launchOver(
        l, processes: c.processes, complete: c.complete, now: .seconds(c.at), ownProgram: ownExe, display: ":0")
        == c.over)
  }

  static var launchPolicy: Policy {
    var p = Policy()
    p.quarantine = .milliseconds(300)
    p.quarantineOnLaunch = true
    return p
  }
  static let secure = WindowInfo(id: 0x100, client: ClientID(0x40_0000), tag: .secure)

  @Test("the engine ends a launch of shieldctl at once, and its connection starts no quarantine")
  func ownProgramEngine() {
    var e = Engine(policy: Self.launchPolicy, ownProgram: ownExe, display: ":0")
    _ = e.handle(.windowAppeared(Self.secure), now: .seconds(1))
    _ = e.handle(.clientLaunching(program: nil), now: .seconds(10))
    #expect(e.shielded == [0x100])
    #expect(e.launchCheckDue == .seconds(10) + .seconds(Engine.launchFirstCheck))
    let fx = e.handle(.launchProcesses([proc(7, started: 9.999, exe: ownExe)], complete: true), now: .seconds(10.002))
    #expect(e.launches.isEmpty && e.shielded.isEmpty)
    #expect(fx.contains { if case .audit(let a) = $0 { return a.event == "launch-end" } else { return false } })
    // Its connection: the pump's quarantine (no identity yet), ended once identified.
    let c = ClientID(0x60_0000)
    _ = e.handle(.clientConnected(c, nil), now: .seconds(10.01))
    #expect(e.shielded == [0x100])
    let me = ClientIdentity(pid: 7, exe: ownExe, comm: "shieldctl", uid: 1000, processAge: 0.01)
    _ = e.handle(.clientIdentified(c, me), now: .seconds(10.011))
    #expect(e.shielded.isEmpty && e.sessions.isEmpty)
    // Identified at the connection (quarantine path off): no quarantine at all.
    let d = ClientID(0x80_0000)
    _ = e.handle(.clientConnected(d, me), now: .seconds(10.02))
    #expect(e.shielded.isEmpty && e.sessions.isEmpty)
    // With LD_LIBRARY_PATH it is not ours: quarantined.
    var injected = me
    injected.loaderPath = "LD_LIBRARY_PATH=/tmp/evil"
    _ = e.handle(.clientConnected(ClientID(0xa0_0000), injected), now: .seconds(10.03))
    #expect(e.shielded == [0x100])
  }

  @Test("a launch whose process is not found yet is looked at again when it has settled, then ends")
  func settles() {
    var e = Engine(policy: Self.launchPolicy, ownProgram: ownExe, display: ":0")
    _ = e.handle(.windowAppeared(Self.secure), now: .seconds(1))
    _ = e.handle(.clientLaunching(program: "xwd"), now: .seconds(10))
    _ = e.handle(.launchProcesses([], complete: true), now: .seconds(10.005))
    #expect(e.launches.count == 1 && e.shielded == [0x100])
    #expect(e.launchCheckDue == .seconds(10) + .seconds(Engine.launchSettle))
    _ = e.handle(.launchProcesses([], complete: true), now: .seconds(10.03))
    #expect(e.launches.isEmpty && e.shielded.isEmpty)
    #expect(e.launchCheckDue == nil)
  }

  @Test("a launch of this display's process stays until its client is identified or the quarantine ends")
  func stays() {
    var e = Engine(policy: Self.launchPolicy, ownProgram: ownExe, display: ":0")
    _ = e.handle(.windowAppeared(Self.secure), now: .seconds(1))
    _ = e.handle(.clientLaunching(program: "ffmpeg"), now: .seconds(10))
    _ = e.handle(.launchProcesses([proc(5, started: 9.999)], complete: true), now: .seconds(10.001))
    _ = e.handle(.launchProcesses([proc(5, started: 9.999)], complete: true), now: .seconds(10.03))
    #expect(e.launches.count == 1 && e.launchCheckDue == nil && e.shielded == [0x100])
    _ = e.handle(.tick, now: .seconds(10.31))
    #expect(e.launches.isEmpty && e.shielded.isEmpty)
  }
}
