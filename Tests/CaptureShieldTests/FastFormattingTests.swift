import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

/// (Random tables use `SplitMix64` from ShieldTestSupport.)
/// The audit line's timestamp and decimals, and the /proc reader, are written by hand for
/// speed (they run for every client that connects): each is checked against the
/// Foundation code it replaced.
@Suite struct FastFormattingTests {
  static let fixedDates: [Double] = [
    0, 0.001, 0.999, 59.5, 86_399.999, 951_782_400.5 /* 2000-02-29 */, 4_107_542_400.25 /* 2100-03-01 */,
    1_796_245_534.105, 1_796_245_534.1, 1_796_245_534.9995, 13_569_465_600 /* 2400-01-01 */,
    -0.001, -86_400.5 /* 1969-12-30 */,
  ]

  @Test("timestamp matches Date.ISO8601FormatStyle (fractional seconds)", arguments: fixedDates)
  func timestampMatchesFoundation(_ t: Double) {
    let d = Date(timeIntervalSince1970: t)
    #expect(AuditFormat.timestamp(d) == d.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true)))
  }

  @Test func timestampMatchesFoundationOnRandomDates() {
    var rng = SplitMix64(seed: 0x5eed)
    var mismatches: [String] = []
    for _ in 0..<3000 {
      let t = Double(rng.next() % 4_000_000_000) + Double(rng.next() % 1_000_000) / 1_000_000
      let d = Date(timeIntervalSince1970: t)
      let ours = AuditFormat.timestamp(d)
      let theirs = d.formatted(Date.ISO8601FormatStyle(includingFractionalSeconds: true))
      if ours != theirs { mismatches.append("\(t): \(ours) vs \(theirs)") }
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
  }

  static let fixedDoubles: [Double] = [
    0, -0.0, 0.0004, 0.0005, 0.0015, 0.301, 0.3, 1, 12.5, 12.3456, 999.9999, 1e11, -0.0001, -2.5, 0.221,
    Double.infinity, -Double.infinity, Double.nan, 1e13,
  ]

  @Test("fixed3 matches %.3f", arguments: fixedDoubles)
  func fixed3MatchesPrintf(_ d: Double) {
    #expect(AuditRecord.Value.fixed3(d) == String(format: "%.3f", d))
  }

  @Test func fixed3MatchesPrintfOnRandomValues() {
    var rng = SplitMix64(seed: 42)
    var mismatches: [String] = []
    for i in 0..<20_000 {
      let magnitude = pow(10, Double(i % 14) - 4)
      var d = Double(rng.next() % 1_000_000_007) / 1_000_000_007 * magnitude
      if i % 3 == 0 { d = -d }
      if i % 5 == 0 { d = (d * 1000).rounded() / 1000 + 0.0005 }  // near halfway
      if AuditRecord.Value.fixed3(d) != String(format: "%.3f", d) {
        mismatches.append("\(d): \(AuditRecord.Value.fixed3(d)) vs \(String(format: "%.3f", d))")
      }
    }
    #expect(mismatches.isEmpty, "\(mismatches.prefix(5))")
  }

  @Test func procReaderMatchesFoundationForThisProcess() throws {
    let pid = Int(getpid())
    let id = ProcessInfoReader.identity(pid: pid)
    #expect(id.exe == (try FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")))
    let comm = try String(contentsOfFile: "/proc/self/comm", encoding: .utf8).trimmingCharacters(in: .newlines)
    #expect(id.comm == comm)
    #expect(id.uid == Int(getuid()))
    let cmdline = FileManager.default.contents(atPath: "/proc/self/cmdline")!.split(separator: 0).prefix(64)
      .map { String(decoding: $0.prefix(1024), as: UTF8.self) }
    #expect(id.cmdline == cmdline)
    #expect(id.failure == nil)
  }

  /// The launch watch matches a client to a launch by how young its process is.
  @Test func procReaderGivesTheProcessAge() throws {
    let id = ProcessInfoReader.identity(pid: Int(getpid()))
    let age = try #require(id.processAge)
    // This test process started before the test ran, and not hours ago.
    #expect(age > 0 && age < 3600, "\(age)")
    let child = Process()
    child.executableURL = URL(fileURLWithPath: "/bin/sleep")
    child.arguments = ["5"]
    try child.run()
    defer { child.terminate() }
    let childAge = try #require(ProcessInfoReader.identity(pid: Int(child.processIdentifier)).processAge)
    #expect(childAge < 1.0 && childAge < age, "\(childAge) vs \(age)")
  }

  struct StatCase: Sendable, CustomTestStringConvertible {
    var stat: String
    var ticks: UInt64?
    var testDescription: String { stat }
  }

  @Test(
    "start time (field 22) of /proc/PID/stat",
    arguments: [
      StatCase(
        stat: "4242 (xwd) S 1 4242 4242 0 -1 4194560 120 0 0 0 0 0 0 0 20 0 1 0 987654 1000 200\n", ticks: 987654),
      // The command name may hold spaces and parentheses: fields count after the last ')'.
      StatCase(
        stat: "7 (a) b (c) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 123 1000 200\n", ticks: 123),
      StatCase(stat: "7 (x) R 1 7", ticks: nil),
      StatCase(stat: "no parenthesis", ticks: nil),
      StatCase(stat: "7 (x) R 1 7 7 0 -1 0 0 0 0 0 0 0 0 0 20 0 1 0 abc 1\n", ticks: nil),
    ])
  func statStartTicks(_ c: StatCase) {
    #expect(ProcessInfoReader.startTicks(stat: Array(c.stat.utf8)) == c.ticks)
  }

  @Test func procReaderOnAGoneProcess() {
    // PIDs above pid_max do not exist.
    let id = ProcessInfoReader.identity(pid: 1 << 30)
    #expect(id.exe == nil && id.comm == nil)
    #expect(id.failure == "process \(1 << 30) exited before it could be identified")
  }

  struct StatusCase: Sendable, CustomTestStringConvertible {
    var status: String
    var uid: Int?
    var testDescription: String { status.replacingOccurrences(of: "\n", with: "⏎") }
  }

  @Test(
    "Uid: line of /proc/PID/status",
    arguments: [
      StatusCase(status: "Name:\tx\nUid:\t1000\t1000\t1000\t1000\nGid:\t5\n", uid: 1000),
      StatusCase(status: "Uid: 0 0 0 0\n", uid: 0),
      StatusCase(status: "Name:\tx\n", uid: nil),
      StatusCase(status: "Uid:\tabc\n", uid: nil),
      StatusCase(status: "", uid: nil),
    ])
  func statusUid(_ c: StatusCase) {
    let id = ProcessInfoReader.parse(
      pid: 7, exe: "/bin/x", comm: Array("x\n".utf8), status: Array(c.status.utf8), cmdline: Array("x\0-y\0".utf8))
    #expect(id.uid == c.uid)
    #expect(id.comm == "x")
    #expect(id.cmdline == ["x", "-y"])
  }
}

@Suite struct LaunchWatchTests {
  struct MapsCase: Sendable, CustomTestStringConvertible {
    var name: String
    var maps: String
    var expected: String?
    var testDescription: String { name }
  }

  @Test(
    "the core libxcb among /proc/self/maps lines",
    arguments: [
      MapsCase(
        name: "core library after an extension library",
        maps: """
          7f00 r--p 00000000 08:01 100 /usr/lib/x86_64-linux-gnu/libxcb-record.so.0.0.0
          7f01 r-xp 00000000 08:01 101 /usr/lib/x86_64-linux-gnu/libxcb.so.1.1.0
          7f02 rw-p 00000000 00:00 0 [heap]
          """,
        expected: "/usr/lib/x86_64-linux-gnu/libxcb.so.1.1.0"),
      MapsCase(
        name: "no libxcb", maps: "7f00 r--p 00000000 08:01 100 /usr/lib/libc.so.6\n7f02 rw-p 0 00:00 0 [stack]",
        expected: nil),
      MapsCase(name: "libxcb-shm only", maps: "7f00 r--p 0 08:01 1 /lib/libxcb-shm.so.0", expected: nil),
      MapsCase(name: "empty", maps: "", expected: nil),
    ])
  func mappedLibxcb(_ c: MapsCase) {
    #expect(LaunchWatch.mappedLibxcb(maps: c.maps) == c.expected)
  }

  /// The watch counts opens of its file (what the loader does at a launch) and nothing else.
  @Test func countsOpensOfTheWatchedFile() throws {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("launchwatch-\(getpid())")
    try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(at: dir) }
    let lib = dir.appendingPathComponent("libfake.so.1").path
    let other = dir.appendingPathComponent("other").path
    #expect(FileManager.default.createFile(atPath: lib, contents: Data([1, 2, 3])))
    #expect(FileManager.default.createFile(atPath: other, contents: Data([1])))
    let watch = try LaunchWatch(path: lib)
    #expect(watch.readLaunches().count == 0)
    var seen = 0
    for _ in 0..<3 {
      close(open(lib, O_RDONLY))
      seen += watch.readLaunches().count
    }
    close(open(other, O_RDONLY))
    #expect(seen == 3)
    #expect(watch.readLaunches().count == 0)
    // The kernel merges identical events not read yet: opens in a burst count as one.
    for _ in 0..<3 { close(open(lib, O_RDONLY)) }
    #expect(watch.readLaunches().count == 1)
    // Replaced by an upgrade (new inode at the same path): the watch follows the path, and
    // the replacement itself counts as a launch (one may have been missed: fail safe).
    try FileManager.default.removeItem(atPath: lib)
    #expect(FileManager.default.createFile(atPath: lib, contents: Data([4])))
    #expect(watch.readLaunches().count >= 1)
    #expect(!watch.lost)
    close(open(lib, O_RDONLY))
    #expect(watch.readLaunches().count == 1)
  }

  @Test func aMissingFileIsAnError() {
    #expect(throws: LaunchWatch.SetupError.self) { try LaunchWatch(path: "/nonexistent/libxcb.so.1") }
  }
}
