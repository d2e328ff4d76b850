import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

// Under the Xorg module the daemon records connections only: the reads of a capturer reach
// it as the module's CaptureNotify (censored or refused). They count as the client's
// capture (`Engine.Event.captureCensored`): a recording recorder's session counts its reads
// and does not go idle, and `capture.learn` learns the program (it is no "quiet" one).

private let secure = WindowInfo(
  id: 0x100, client: ClientID(0x40_0000), facts: Facts(class: "secret"), tag: .secure, propertiesKnown: true)

private func who(_ pid: Int, _ exe: String, ino: UInt64) -> ClientIdentity {
  var i = ClientIdentity(pid: pid, exe: exe, comm: String(exe.split(separator: "/").last!), uid: 1000)
  i.programFile = .init(dev: 2049, ino: ino, size: 1000, mtime: 5)
  i.processAge = 0.01
  return i
}

/// The engine as server enforcement runs it (`WatcherLoop.effectivePolicy`).
private func serverEngine() -> Engine {
  var p = WatcherLoop.effectivePolicy(Policy(), serverEnforced: true)
  p.learn = true
  var e = Engine(policy: p)
  _ = e.handle(.windowAppeared(secure), now: .seconds(0))
  return e
}

private let read = CaptureRequest(kind: "MIT-SHM 4", target: 0x100)

@Suite struct CensoredCaptureTests {
  /// ffmpeg (a `capture.known` recorder) reading every 40 ms for 8 s: its session stays
  /// awake and counts the reads; before, it went idle after `capture.idle` (5 s) and ended
  /// with "requests 0".
  @Test func aRecordingRecorderIsNotIdle() {
    var e = serverEngine()
    let c = ClientID(0x60_0000)
    let ffmpeg = who(20, "/usr/bin/ffmpeg", ino: 9)
    var audits: [String] = []
    func take(_ fx: [Engine.Effect]) {
      for f in fx { if case .audit(let r) = f { audits.append(r.event) } }
    }
    take(e.handle(.clientConnected(c, ffmpeg), now: .seconds(1)))
    for i in 0..<200 {
      let t = MonotonicTime.seconds(1.1 + 0.04 * Double(i))
      take(e.handle(.captureCensored(c, read, ffmpeg), now: t))
      take(e.handle(.tick, now: t + .milliseconds(20)))
    }
    #expect(!audits.contains("session-idle"), "\(audits)")
    take(e.handle(.clientGone(c), now: .seconds(10)))
    take(e.handle(.tick, now: .seconds(20)))
    #expect(e.sessions.isEmpty)
    #expect(audits.filter { $0 == "session-end" }.count == 1, "\(audits)")
  }

  /// The session-end record of the recorder counts its reads.
  @Test func theSessionCountsTheCensoredReads() {
    var e = serverEngine()
    let c = ClientID(0x60_0000)
    let ffmpeg = who(20, "/usr/bin/ffmpeg", ino: 9)
    _ = e.handle(.clientConnected(c, ffmpeg), now: .seconds(1))
    for i in 0..<3 { _ = e.handle(.captureCensored(c, read, ffmpeg), now: .seconds(1.1 + Double(i) * 0.1)) }
    _ = e.handle(.clientGone(c), now: .seconds(2))
    let fx = e.handle(.tick, now: .seconds(10))
    let end = fx.compactMap { f -> AuditRecord? in
      if case .audit(let r) = f, r.event == "session-end" { return r }
      return nil
    }.first
    #expect(end?.fields.first { $0.key == "requests" }?.value == .int(3), "\(fx)")
  }

  /// scrot used four times under the module: its program captured (before: starts only,
  /// "quiet" after three, and a configured quarantine would skip it).
  @Test func censoredToolsAreLearnedAsCapturers() {
    var e = serverEngine()
    for n in 0..<4 {
      let c = ClientID(UInt32(0x60_0000 + n * 0x20_0000))
      let scrot = who(30 + n, "/usr/bin/scrot", ino: 11)
      _ = e.handle(.clientConnected(c, scrot), now: .seconds(Double(1 + n)))
      _ = e.handle(
        .captureCensored(c, CaptureRequest(kind: "GetImage", target: 0x100), scrot), now: .seconds(Double(1 + n) + 0.01)
      )
      _ = e.handle(.clientGone(c), now: .seconds(Double(1 + n) + 0.02))
    }
    let file = CaptureHistory.ProgramFile(dev: 2049, ino: 11, size: 1000, mtime: 5)
    #expect(e.history.standing(file) == .captured)
    #expect(e.history.entry(file)?.captures == 4)
  }

  /// A tool gone before its own lookup (identity failed): learned from the notice's.
  @Test func aToolGoneBeforeItsLookupIsLearnedFromTheNotice() {
    var e = serverEngine()
    let c = ClientID(0x60_0000)
    _ = e.handle(.clientConnected(c, ClientIdentity(failure: "process gone")), now: .seconds(1))
    _ = e.handle(.captureCensored(c, read, who(50, "/usr/bin/xwd", ino: 13)), now: .seconds(1.01))
    #expect(e.history.standing(.init(dev: 2049, ino: 13, size: 1000, mtime: 5)) == .captured)
  }

  /// An allowed client's censored read (the module had not granted it yet) teaches nothing.
  @Test func allowedClientsAreNotLearned() {
    var p = WatcherLoop.effectivePolicy(Policy(), serverEnforced: true)
    p.captureAllow = [Matcher(exe: try! Pattern.parse("/usr/bin/ok"), name: "ok")]
    var e = Engine(policy: p)
    let c = ClientID(0x60_0000)
    let ok = who(40, "/usr/bin/ok", ino: 12)
    _ = e.handle(.clientConnected(c, ok), now: .seconds(1))
    _ = e.handle(.captureCensored(c, read, ok), now: .seconds(1.1))
    #expect(e.history.entry(.init(dev: 2049, ino: 12, size: 1000, mtime: 5))?.captures ?? 0 == 0)
  }
}
