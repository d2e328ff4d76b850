import Testing

@testable import CaptureShieldCore

// A learned capturer pre-empted at its start (`capture.learn`, `Engine.learnedLaunchPaths`),
// and a learned one-shot tool's session over with the tool (no first shot for learned
// tools).

private let secure = WindowInfo(
  id: 0x100, client: ClientID(0x40_0000), facts: Facts(class: "secret"), tag: .secure, propertiesKnown: true)

private func tool(pid: Int, exe: String, ino: UInt64, script: String? = nil, age: Double = 0.01) -> ClientIdentity {
  var i = ClientIdentity(pid: pid, exe: exe, comm: String((script ?? exe).split(separator: "/").last!), uid: 1000)
  i.script = script
  i.programFile = .init(dev: 2049, ino: ino, size: 1000, mtime: 5)
  i.processAge = age
  return i
}

/// An engine whose history has `exe` (or `script`) as a capturer: one use that captured.
private func learned(
  learn: Bool = true, exe: String = "/usr/bin/scrot", script: String? = nil, quarantine: PolicyDuration? = nil
) -> Engine {
  var p = Policy()
  p.learn = true
  p.quarantine = quarantine
  var e = Engine(policy: p)
  _ = e.handle(.windowAppeared(secure), now: .seconds(0))
  let first = ClientID(0x60_0000)
  _ = e.handle(.clientConnected(first, tool(pid: 10, exe: exe, ino: 7, script: script)), now: .seconds(1))
  _ = e.handle(.captureRequest(first, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(1.001))
  _ = e.handle(.clientGone(first), now: .seconds(1.01))
  _ = e.handle(.tick, now: .seconds(20))
  #expect(!e.shieldsActive)
  if !learn {
    p.learn = false
    _ = e.handle(.policyReplaced(p), now: .seconds(20))
  }
  return e
}

@Suite struct LearnedLaunchTests {
  /// The paths the shell watches: the capturers only, and only while learning is on.
  @Test func watchedPathsAreTheCapturers() {
    var e = learned()
    #expect(e.learnedLaunchPaths == ["/usr/bin/scrot"])
    _ = e.handle(
      .clientConnected(ClientID(0x80_0000), tool(pid: 11, exe: "/usr/bin/xdpyinfo", ino: 8)), now: .seconds(21))
    #expect(e.learnedLaunchPaths == ["/usr/bin/scrot"])
    #expect(learned(learn: false).learnedLaunchPaths.isEmpty)
  }

  /// A learned tool's start holds the shields (armed before: `quarantineTargets`, without
  /// quarantine) until its client is identified, then its known session takes over; an
  /// ordinary program's start does nothing. Control: learning off, nothing at the start.
  @Test(arguments: [true, false])
  func learnedStartShieldsBeforeTheConnection(_ learn: Bool) {
    var e = learned(learn: learn)
    #expect(e.quarantineTargets == (learn ? [0x100] : []))
    _ = e.handle(.clientLaunching(program: "xdpyinfo"), now: .seconds(30))
    #expect(!e.shieldsActive)
    let fx = e.handle(.clientLaunching(program: "scrot"), now: .seconds(31))
    #expect(e.shieldsActive == learn)
    #expect(fx.contains(.shield(0x100)) == learn)
    let c = ClientID(0x80_0000)
    _ = e.handle(.clientConnected(c, tool(pid: 12, exe: "/usr/bin/scrot", ino: 7)), now: .seconds(31.002))
    #expect(e.launches.isEmpty)
    #expect(e.shieldsActive == learn)  // its known session from here
  }

  /// A learned tool whose process exits without connecting: over at the process check.
  @Test func learnedStartEndsWhenTheProcessExits() {
    var e = learned()
    _ = e.handle(.clientLaunching(program: "scrot"), now: .seconds(30))
    _ = e.handle(.launchProcesses([], complete: true), now: .seconds(30.03))
    #expect(e.launches.isEmpty)
    #expect(!e.shieldsActive)
  }

  /// A learned script (an interpreter runs it): the exec and the interpreter both open it,
  /// two launches of one start, ended by its client; the process check knows it by `comm`.
  @Test func learnedScriptStart() {
    var e = learned(exe: "/usr/bin/python3.11", script: "/home/u/bin/shot.py")
    #expect(e.learnedLaunchPaths == ["/home/u/bin/shot.py"])
    _ = e.handle(.clientLaunching(program: "shot.py"), now: .seconds(30))
    _ = e.handle(.clientLaunching(program: "shot.py"), now: .seconds(30.004))
    #expect(e.launches.count == 2)
    let running = LaunchProcess(
      pid: 12, started: .seconds(29.99), exe: "/usr/bin/python3.11", comm: "shot.py", loadsXCB: false,
      display: ":0")
    _ = e.handle(.launchProcesses([running], complete: true), now: .seconds(30.03))
    #expect(e.launches.count == 2)  // still starting: not "process exited"
    let c = ClientID(0x80_0000)
    let id = tool(pid: 12, exe: "/usr/bin/python3.11", ino: 7, script: "/home/u/bin/shot.py", age: 0.05)
    _ = e.handle(.clientConnected(c, id), now: .seconds(30.05))
    #expect(e.launches.isEmpty)
    #expect(e.shieldsActive)
  }

  /// `python3 shot.py`: the interpreter runs under its own name; the script is among its
  /// first arguments (a process check keeps the launch, a process list filter keeps it).
  @Test func aScriptRunByItsInterpreterRunsTheScript() {
    var p = LaunchProcess(pid: 12, started: .seconds(1), exe: "/usr/bin/python3.11", comm: "python3")
    #expect(!Engine.runs(p, "shot.py"))
    p.arguments = ["/usr/bin/python3", "-u", "/home/u/bin/shot.py"]
    #expect(Engine.runs(p, "shot.py"))
    #expect(Engine.runs(p, "python3.11"))
    p.arguments = ["/usr/bin/python3", "-u", "-X", "/home/u/bin/shot.py"]  // not among the first three
    #expect(!Engine.runs(p, "shot.py"))
  }

  /// Point 2: a learned one-shot tool's session ends when it disconnects, plus the linger
  /// (before: `learnedKnownHold`, 5 s, after its connection whatever it did).
  @Test func learnedSessionEndsWithTheTool() {
    var e = learned()
    let c = ClientID(0x80_0000)
    let at = 40.0
    _ = e.handle(.clientConnected(c, tool(pid: 12, exe: "/usr/bin/scrot", ino: 7)), now: .seconds(at))
    _ = e.handle(.captureRequest(c, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(at + 0.01))
    _ = e.handle(.clientGone(c), now: .seconds(at + 0.1))
    let down = MonotonicTime.seconds(at + 0.1) + e.policy.linger
    _ = e.handle(.tick, now: down)
    #expect(!e.shieldsActive)
    #expect(e.sessions.isEmpty)
  }
}
