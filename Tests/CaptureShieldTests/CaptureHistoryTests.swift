import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

// What the engine learns per program file (`capture.learn`, `CaptureHistory`).

private func file(_ ino: UInt64, size: Int64 = 1000, mtime: Int64 = 5) -> CaptureHistory.ProgramFile {
  .init(dev: 2049, ino: ino, size: size, mtime: mtime)
}

private func identity(pid: Int, exe: String, file f: CaptureHistory.ProgramFile?, script: String? = nil)
  -> ClientIdentity
{
  var i = ClientIdentity(pid: pid, exe: exe, comm: String(exe.split(separator: "/").last!), uid: 1000)
  i.script = script
  i.programFile = f
  return i
}

private let secure = WindowInfo(
  id: 0x100, client: ClientID(0x40_0000), facts: Facts(class: "secret"), tag: .secure, propertiesKnown: true)

private func engine(learn: Bool = true, quarantine: PolicyDuration? = nil, allow: [Matcher] = []) -> Engine {
  var p = Policy()
  p.learn = learn
  p.quarantine = quarantine
  p.quarantineOnLaunch = false
  p.captureAllow = allow
  var e = Engine(policy: p)
  _ = e.handle(.windowAppeared(secure), now: .seconds(0))
  return e
}

private func knownSessions(_ e: Engine, _ c: ClientID) -> Int {
  e.sessions.values.filter { $0.client == c && $0.kind == .known }.count
}

@Suite struct CaptureHistoryTests {
  /// One program's uses in a row: whether its connection starts a known session (before
  /// any request), with learning on and off.
  struct Case: Sendable, CustomTestStringConvertible {
    var learn: Bool
    var knownOnSecondUse: Bool
    var testDescription: String { "learn \(learn)" }
  }

  @Test(arguments: [Case(learn: true, knownOnSecondUse: true), Case(learn: false, knownOnSecondUse: false)])
  func capturedProgramIsKnownNextTime(_ c: Case) {
    var e = engine(learn: c.learn)
    let tool = identity(pid: 10, exe: "/usr/bin/import", file: file(7))
    let first = ClientID(0x60_0000)
    _ = e.handle(.clientConnected(first, tool), now: .seconds(1))
    #expect(knownSessions(e, first) == 0)
    let fx = e.handle(.captureRequest(first, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(1.1))
    #expect(fx.contains(.historyChanged) == c.learn)
    _ = e.handle(.clientGone(first), now: .seconds(1.2))
    let second = ClientID(0x80_0000)
    let fx2 = e.handle(
      .clientConnected(second, identity(pid: 11, exe: "/usr/bin/import", file: file(7))), now: .seconds(9))
    #expect((knownSessions(e, second) == 1) == c.knownOnSecondUse)
    #expect(e.shieldsActive == c.knownOnSecondUse)
    let learned = fx2.contains {
      if case .audit(let r) = $0, r.event == "session-start" {
        return r.fields.contains { $0.key == "known" && $0.value.description == "learned" }
      }
      return false
    }
    #expect(learned == c.knownOnSecondUse)
    // Not pinned while connected: over after `learnedKnownHold`, the client still there.
    _ = e.handle(.tick, now: .seconds(9) + Engine.learnedKnownHold)
    #expect(knownSessions(e, second) == 0)
    #expect(!e.shieldsActive)
  }

  /// Learning pre-empts a program's start: a connection of a process older than
  /// `Engine.launchMatchAge` is an ordinary client (unknown age: pre-empted, the safe side).
  @Test(arguments: [
    (nil, true), (0.05, true), (Engine.launchMatchAge, true), (Engine.launchMatchAge + 0.01, false), (600, false),
  ])
  func onlyYoungProcessesArePreempted(_ age: Double?, _ known: Bool) {
    var e = engine()
    let a = ClientID(0x60_0000)
    _ = e.handle(.clientConnected(a, identity(pid: 10, exe: "/usr/bin/chromium", file: file(7))), now: .seconds(1))
    _ = e.handle(.captureRequest(a, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(1))
    var later = identity(pid: 10, exe: "/usr/bin/chromium", file: file(7))
    later.processAge = age
    let b = ClientID(0x80_0000)
    _ = e.handle(.clientConnected(b, later), now: .seconds(30))
    #expect((knownSessions(e, b) == 1) == known)
    #expect(e.isLearnedKnown(later) == known)
  }

  @Test func replacedBinaryIsANewProgram() {
    var e = engine()
    let a = ClientID(0x60_0000)
    _ = e.handle(.clientConnected(a, identity(pid: 10, exe: "/usr/bin/t", file: file(7))), now: .seconds(1))
    _ = e.handle(.captureRequest(a, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(1))
    _ = e.handle(.clientGone(a), now: .seconds(1))
    for (n, f) in [(1, file(8)), (2, file(7, size: 999)), (3, file(7, mtime: 6))] {
      let b = ClientID(UInt32(0x80_0000 + n * 0x20_0000))
      _ = e.handle(.clientConnected(b, identity(pid: 10 + n, exe: "/usr/bin/t", file: f)), now: .seconds(10))
      #expect(knownSessions(e, b) == 0, "\(f)")
    }
  }

  @Test func scriptIsTheProgram() {
    var e = engine()
    let a = ClientID(0x60_0000)
    let shot = identity(pid: 10, exe: "/usr/bin/python3.11", file: file(70), script: "/usr/bin/shot")
    _ = e.handle(.clientConnected(a, shot), now: .seconds(1))
    _ = e.handle(.captureRequest(a, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(1))
    #expect(e.history.entries[file(70)]?.path == "/usr/bin/shot")
  }

  @Test func allowedProgramIsNeverLearned() {
    var e = engine(allow: [Matcher(exe: try! Pattern.parse("/usr/bin/ok"), name: "ok")])
    let a = ClientID(0x60_0000)
    _ = e.handle(.clientConnected(a, identity(pid: 10, exe: "/usr/bin/ok", file: file(9))), now: .seconds(1))
    let fx = e.handle(.captureRequest(a, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(1))
    #expect(!fx.contains(.historyChanged))
    #expect(e.history.entries[file(9)]?.captures ?? 0 == 0)
  }

  /// Quarantine at each start: skipped once a program started `quietAfter` times without
  /// capturing, only with learning on; a quiet program that captures is known next time.
  @Test(arguments: [true, false])
  func quietProgramsSkipQuarantine(learn: Bool) {
    var e = engine(learn: learn, quarantine: .milliseconds(300))
    var quarantined: [Bool] = []
    for n in 0..<5 {
      let c = ClientID(UInt32(0x60_0000 + n * 0x20_0000))
      let t = Double(n)
      _ = e.handle(.clientConnected(c, identity(pid: 10 + n, exe: "/usr/bin/xclock", file: file(3))), now: .seconds(t))
      quarantined.append(e.sessions.values.contains { $0.client == c && $0.kind == .quarantine })
      _ = e.handle(.clientGone(c), now: .seconds(t + 0.5))
    }
    #expect(quarantined == (learn ? [true, true, true, false, false] : [true, true, true, true, true]))
    // The quiet program captures: known from its next start.
    let c = ClientID(0x20_0000)
    _ = e.handle(.clientConnected(c, identity(pid: 99, exe: "/usr/bin/xclock", file: file(3))), now: .seconds(9))
    _ = e.handle(.captureRequest(c, CaptureRequest(kind: "GetImage", target: 0x100)), now: .seconds(9))
    _ = e.handle(.clientGone(c), now: .seconds(9.1))
    let d = ClientID(0x22_0000)
    _ = e.handle(.clientConnected(d, identity(pid: 98, exe: "/usr/bin/xclock", file: file(3))), now: .seconds(20))
    #expect((knownSessions(e, d) == 1) == learn)
  }

  /// The shell with quarantine on: a client connects unidentified (quarantined at once),
  /// and its identity comes after. A quiet program's quarantine then ends.
  @Test(arguments: [true, false])
  func quietProgramIdentifiedLate(learn: Bool) {
    var e = engine(learn: learn, quarantine: .milliseconds(300))
    var live: [Bool] = []
    for n in 0..<5 {
      let c = ClientID(UInt32(0x60_0000 + n * 0x20_0000))
      let t = Double(n)
      _ = e.handle(.clientConnected(c, nil), now: .seconds(t))
      let id = identity(pid: 10 + n, exe: "/usr/bin/xprop", file: file(4))
      _ = e.handle(.clientIdentified(c, id), now: .seconds(t + 0.01))
      live.append(e.sessions.values.contains { $0.client == c && $0.kind == .quarantine })
      _ = e.handle(.clientGone(c), now: .seconds(t + 0.5))
    }
    #expect(live == (learn ? [true, true, true, false, false] : [true, true, true, true, true]))
  }

  @Test func boundedLeastRecentlySeenDropped() {
    var h = CaptureHistory(limit: 4)
    for i in 0..<6 { h.noteStart(file(UInt64(i)), path: "/p\(i)", at: Double(i)) }
    h.noteStart(file(2), path: "/p2", at: 10)  // seen again: kept
    h.noteStart(file(9), path: "/p9", at: 11)
    #expect(h.entries.count == 4)
    #expect(Set(h.entries.keys.map(\.ino)) == [2, 4, 5, 9])
  }

  @Test func codableRoundTrip() throws {
    var h = CaptureHistory()
    h.noteStart(file(1), path: "/usr/bin/a", at: 1)
    h.noteCapture(file(1), path: "/usr/bin/a", at: 2)
    for t in 0..<3 { h.noteStart(file(2), path: "/usr/bin/b", at: Double(t)) }
    let back = try JSONDecoder().decode(CaptureHistory.self, from: JSONEncoder().encode(h))
    #expect(back == h)
    #expect(back.standing(file(1)) == .captured)
    #expect(back.standing(file(2)) == .quiet)
    #expect(back.standing(file(3)) == .new)
  }

  @Test func forgetAndClear() {
    var h = CaptureHistory()
    h.noteCapture(file(1), path: "/usr/bin/a", at: 1)
    h.noteCapture(file(2), path: "/usr/bin/a", at: 2)  // replaced binary, same path
    h.noteCapture(file(3), path: "/usr/bin/b", at: 2)
    #expect(h.forget(path: "/usr/bin/a") == 2)
    #expect(h.forget(path: "/usr/bin/a") == 0)
    h.clear()
    #expect(h.entries.isEmpty)
  }

  /// A broken file is moved aside (`.broken`), named in an error record, and learning
  /// starts empty; a good one loads; a missing one is empty.
  @Test(arguments: ["{not json", "{\"version\": 9, \"entries\": []}", "{\"version\": 1}"])
  func brokenFileKeptAside(_ text: String) throws {
    let dir = try makeTemporaryDirectory(prefix: "captureshield-history")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/state/captureshield/history.json"
    let logPath = dir + "/audit.log"
    let logFD = open(logPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
    defer { close(logFD) }
    let store = HistoryStore(path: path, log: AuditLog(format: .json, syslog: false, output: logFD))
    #expect(store.load().entries.isEmpty)  // missing
    var h = CaptureHistory()
    h.noteCapture(file(1), path: "/usr/bin/a", at: 1)
    store.save(h, now: MonotonicTime.seconds(1))
    var st = stat()
    #expect(stat(path, &st) == 0 && st.st_mode & 0o777 == 0o600)
    #expect(stat(dir + "/state/captureshield", &st) == 0 && st.st_mode & 0o777 == 0o700)
    #expect(store.load() == h)
    try text.write(toFile: path, atomically: false, encoding: .utf8)
    #expect(store.load().entries.isEmpty)
    #expect(access(path, F_OK) != 0)
    #expect((try? String(contentsOfFile: path + ".broken", encoding: .utf8)) == text)
    let log = (try? String(contentsOfFile: logPath, encoding: .utf8)) ?? ""
    #expect(
      log.contains("\"error\"") && log.contains(path + ".broken") && log.contains("learning starts empty"), "\(log)")
  }

  @Test(
    arguments: [
      (["XDG_STATE_HOME": "/s/", "HOME": "/h"], "/s/captureshield/history.json"),
      (["XDG_STATE_HOME": "rel", "HOME": "/h"], "/h/.local/state/captureshield/history.json"),
      ([:], nil),
    ] as [([String: String], String?)])
  func path(_ env: [String: String], _ expected: String?) {
    #expect(CaptureHistory.path(environment: env) == expected)
  }
}

@Suite struct LearnPolicyKeyTests {
  @Test(arguments: [("{ version: 1 }", true), ("{ version: 1, capture: { learn: false } }", false)])
  func learnKey(_ source: String, _ expected: Bool) throws {
    let dir = try makeTemporaryDirectory(prefix: "captureshield-learn")
    defer { try? FileManager.default.removeItem(atPath: dir) }
    let path = dir + "/p.json5"
    try source.write(toFile: path, atomically: true, encoding: .utf8)
    #expect(try PolicyLoader.load(paths: [path]).learn == expected)
  }
}

/// The program file a real process is learned by (`ProcessInfoReader`): its executable, the
/// script an interpreter runs, and none for an interpreter with no script file.
@Suite struct ProgramFileTests {
  private static func programFile(_ executable: String, _ arguments: [String]) throws -> CaptureHistory.ProgramFile? {
    let child = Process()
    child.executableURL = URL(fileURLWithPath: executable)
    child.arguments = arguments
    try child.run()
    defer { child.terminate() }
    // The exec is over once /proc/PID/exe is the program's and its arguments are set up (the
    // kernel switches the executable before it writes the new arguments: an empty cmdline).
    let proc = "/proc/\(child.processIdentifier)"
    let deadline = Date().addingTimeInterval(5)
    while Date() < deadline {
      let exe = ProcessInfoReader.readLink(proc + "/exe") ?? ""
      let execd = exe.hasSuffix("/sleep") || exe.contains("/python3")
      if execd, !(ProcessInfoReader.readSmallFile(proc + "/cmdline") ?? []).isEmpty { break }
      usleep(2_000)
    }
    return ProcessInfoReader.identity(pid: Int(child.processIdentifier)).programFile
  }

  private static func fileOf(_ path: String) throws -> CaptureHistory.ProgramFile {
    var st = stat()
    try #require(stat(path, &st) == 0, "stat \(path)")
    return ProcessInfoReader.programFile(st)
  }

  @Test func executableScriptOrNone() throws {
    #expect(try Self.programFile("/bin/sleep", ["5"]) == Self.fileOf("/bin/sleep"))
    let python = "/usr/bin/python3"
    try #require(FileManager.default.isExecutableFile(atPath: python), "python3 missing (scripts/install-deps.sh)")
    let dir = try makeTemporaryDirectory(prefix: "captureshield-programfile")
    defer { removeTree(dir) }
    let script = dir + "/shot.py"
    try "import time\ntime.sleep(5)\n".write(toFile: script, atomically: true, encoding: .utf8)
    let scripted = try Self.programFile(python, [script])
    let scriptFile = try Self.fileOf(script)
    #expect(scripted == scriptFile, "\(String(describing: scripted)) vs \(scriptFile)")
    // `python3 -c`: no program of its own (learning python3 would pre-empt every python program).
    #expect(try Self.programFile(python, ["-c", "import time; time.sleep(5)"]) == nil)
  }
}
