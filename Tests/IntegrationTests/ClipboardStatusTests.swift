// `shieldctl clipboard status` over time: the copy's age and the
// countdown to its clear come from one clock. The daemon republishes its state whenever
// anything changes (here: a new window); every republished status must give the same
// copy time and clear time, so that two status calls in sequence show the age grown and
// the countdown shrunk by the same amount.

import CaptureShield
import Foundation
import ShieldTestSupport
import Testing

@Suite("Clipboard status times", .serialized, .timeLimit(.minutes(2)))
struct ClipboardStatusTests {
  /// "copied 2.5s ago, cleared in 57.5s" → (2.5, 57.5), from the CLI's line for CLIPBOARD.
  static func ages(_ text: String) -> (age: Double, left: Double)? {
    guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("CLIPBOARD:") }) else { return nil }
    func seconds(after marker: String, before end: String) -> Double? {
      guard let a = line.range(of: marker), let b = line.range(of: end, range: a.upperBound..<line.endIndex) else {
        return nil
      }
      let s = line[a.upperBound..<b.lowerBound]
      // Text.duration: "850ms", "2.5s", "1m 05s"
      if s.hasSuffix("ms") { return Double(s.dropLast(2)).map { $0 / 1000 } }
      let parts = s.split(separator: " ")
      var total = 0.0
      for p in parts {
        if p.hasSuffix("m"), let m = Double(p.dropLast()) {
          total += m * 60
        } else if p.hasSuffix("s"),
          let v = Double(p.dropLast())
        {
          total += v
        } else {
          return nil
        }
      }
      return total
    }
    guard let age = seconds(after: "copied ", before: " ago"), let left = seconds(after: "cleared in ", before: ";")
    else { return nil }
    return (age, left)
  }

  @Test("two status calls in sequence: the age grows and the countdown shrinks alike, across a republish")
  func oneClock() async throws {
    let server = try await XvfbServer.start()
    let daemon = try await DaemonProcess.start(on: server, policy: #"{version: 1, clipboard: {clearAfter: "60s"}}"#)
    let source = try CopySource(display: server.display, secure: true, text: "status-clock-secret")
    try await waitUntil("the source window is secure") {
      (try daemon.state())?.windows.contains { $0.id == source.window && $0.secure } ?? false
    }
    try source.copy(to: ["CLIPBOARD"])
    try await waitUntil("the copy is guarded", timeout: .seconds(10)) {
      try daemon.state()?.clipboard?.guarded.contains { $0.selection == "CLIPBOARD" && $0.state == "guarded" }
        ?? false
    }
    let first = try #require(try daemon.state()?.clipboard?.guarded.first)
    let text1 = try await Shieldctl.run(["clipboard", "status"], on: server)
    // Time passes, then the daemon republishes its state (a new window: the marker).
    try await Task.sleep(for: .seconds(2))
    try await daemon.waitUntilCaughtUp()
    let second = try #require(try daemon.state()?.clipboard?.guarded.first)
    let text2 = try await Shieldctl.run(["clipboard", "status"], on: server)

    // The published times do not move when the state is republished.
    #expect(abs(second.since - first.since) < 0.05, "since: \(first.since) then \(second.since)")
    #expect(abs(second.clearsAt! - first.clearsAt!) < 0.05, "clearsAt: \(first.clearsAt!) then \(second.clearsAt!)")
    #expect(abs(first.clearsAt! - first.since - 60) < 0.05)
    // What the user reads: older by as much as it is nearer to its clear.
    let a1 = try #require(Self.ages(text1.stdoutText), "\(text1.stdoutText)")
    let a2 = try #require(Self.ages(text2.stdoutText), "\(text2.stdoutText)")
    print("clipboard status: \(a1) then \(a2)")
    #expect(a2.age > a1.age && a2.left < a1.left, "\(text1.stdoutText) then \(text2.stdoutText)")
    #expect(abs((a2.age - a1.age) - (a1.left - a2.left)) < 0.25, "\(a1) then \(a2)")
    #expect(abs(a1.age + a1.left - 60) < 0.25 && abs(a2.age + a2.left - 60) < 0.25, "\(a1) then \(a2)")
    source.stop()
    await daemon.stop()
    await server.stop()
  }
}
