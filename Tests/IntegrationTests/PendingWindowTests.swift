// Secret before the tag, on a real headless Xorg with the module and the real daemon: a
// window the daemon's policy makes secure is secret from its first frame. The daemon says
// it classifies every window (root `_CAPTURE_SHIELD_CLASSIFY`); the module holds an
// untrusted client's new top-level secure until the daemon answers (`_CAPTURE_SHIELD_POLICY`
// 0 or 1). The daemon is stopped (SIGSTOP) while two programs map their windows, one the
// policy makes secure and an ordinary one: untrusted captures get neither (fail closed), the
// user (this trusted process) sees both; once the daemon runs again the secure one stays
// black and the ordinary one reads. Positive control: the module's rule off (DisableRules
// pending): the window the policy makes secure is captured before the daemon answers.

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Testing

@Suite("Secret before the tag (module rule pending + the daemon's answers)", .serialized, .timeLimit(.minutes(6)))
struct PendingWindowTests {
  static let bankRect = PixelRect(x: 320, y: 60, width: 200, height: 150)
  static let plainRect = PixelRect(x: 60, y: 60, width: 200, height: 150)
  static var full: Int { bankRect.width * bankRect.height }

  /// A window of another program (`shieldctl test-window`, an untrusted client): its id.
  static func window(on server: XvfbServer, className: String, rect: PixelRect, color: String) async throws
    -> (BackgroundProcess, UInt32)
  {
    let p = try server.startBackground(
      Shieldctl.path,
      [
        "test-window", "--print-id", "--class", className, "--title", className, "--color", color,
        "--geometry", "\(rect.width)x\(rect.height)+\(rect.x)+\(rect.y)",
      ])
    try await waitUntil("\(className) prints its window id", timeout: .seconds(10)) {
      String(decoding: p.stdout, as: UTF8.self).hasSuffix("\n")
    }
    let text = String(decoding: p.stdout, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
    let id = try #require(UInt32(text.dropFirst(2), radix: 16), "\(text)")
    try await waitUntil("\(className) is viewable") { try server.geometry(of: id).isViewable }
    return (p, id)
  }

  @Test(
    "mapped while the daemon is stopped: untrusted captures get neither window, the user both; answered: the secure one stays black",
    arguments: [true, false])
  func heldUntilTheDaemonAnswers(pendingRule: Bool) async throws {
    #expect(XorgModule.isBuilt, "build the module first: make xorg-module")
    let server = try await XvfbServer.startXorg(
      moduleDirectory: XorgModule.directory,
      moduleOptions: XorgModule.snippetOptions() + (pendingRule ? [] : ["Option \"DisableRules\" \"pending\""]))
    let daemon = try await DaemonProcess.start(
      on: server, policy: "{version: 1, secure: [{class: \"BankApp\"}], replaceDefaultSecure: true}")
    try await waitUntil("the module hears that the daemon classifies", timeout: .seconds(10)) {
      server.xorgLog.contains("the daemon is classifying new windows")
    }

    daemon.signal(SIGSTOP)
    let (bankApp, bank) = try await Self.window(on: server, className: "BankApp", rect: Self.bankRect, color: "ff0000")
    let (plainApp, plain) = try await Self.window(on: server, className: "XTerm", rect: Self.plainRect, color: "00ff00")
    let before = try await Capture.xwdRoot(on: server)
    let mine = try Capture.getImageRoot(on: server)
    let bankBefore = before.count(of: RGB.red, tolerance: 8, in: Self.bankRect)
    let plainBefore = before.count(of: RGB.green, tolerance: 8, in: Self.plainRect)
    print(
      "[pending] rule \(pendingRule ? "on" : "off"), daemon stopped: xwd read \(bankBefore) of \(Self.full) px "
        + "of the window the policy makes secure, \(plainBefore) of the ordinary one")
    #expect(mine.count(of: RGB.red, tolerance: 8, in: Self.bankRect) == Self.full, "the user sees the secure window")
    #expect(mine.count(of: RGB.green, tolerance: 8, in: Self.plainRect) == Self.full, "and the ordinary one")
    if pendingRule {
      #expect(bankBefore == 0, "held: nothing of the window the policy will make secure")
      #expect(plainBefore == 0, "fail closed: nothing of the ordinary one either, until the daemon answers")
    } else {
      #expect(bankBefore == Self.full, "control: the window is read before the daemon's tag")
    }

    daemon.signal(SIGCONT)
    try await waitUntil("the daemon tags the BankApp window", timeout: .seconds(10)) {
      (try daemon.state())?.windows.contains { $0.id == bank && $0.secure } ?? false
    }
    try await waitUntil("the ordinary window reads again", timeout: .seconds(10)) {
      try await Capture.xwdRoot(on: server).count(of: RGB.green, tolerance: 8, in: Self.plainRect) == Self.full
    }
    let after = try await Capture.xwdRoot(on: server)
    #expect(after.count(of: RGB.red, tolerance: 8, in: Self.bankRect) == 0, "answered: the secure window stays black")

    _ = plain
    _ = await bankApp.stop()
    _ = await plainApp.stop()
    _ = await daemon.stop()
    await server.stop()
  }
}
