import Foundation
import Testing

@testable import CaptureShield

/// (Random tables use `SplitMix64` from HostileInputTests.)
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
