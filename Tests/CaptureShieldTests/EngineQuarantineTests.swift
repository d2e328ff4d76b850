import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {
  static let quarantineScenarios: [Scenario] = [
    Scenario(
      name: "a new client shields secure windows until the quarantine deadline (not capturing)",
      policy: policy(allow: [allowShell], quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(
          1, .clientConnected(grab, grabberID), startShieldingW1(kind: "quarantine", client: grab) + ["publish"],
          shielded: [w1], capturing: false, active: true, deadline: .at(6),
          sessions: ["#1 quarantine 0x600000 req=0 until 6"]),
        Step(2, .clientConnected(shell, shellID), ["publish"], sessions: ["#1 quarantine 0x600000 req=0 until 6"]),
        Step(5.9, .tick, [], shielded: [w1]),
        Step(
          6, .tick,
          [
            "audit session-end session=1 kind=quarantine client=0x600000 why='quarantine over'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], active: false, deadline: Deadline.none, sessions: []),
      ]),
    Scenario(
      name: "an allowed client is not quarantined",
      policy: policy(allow: [allowShell], quarantine: .seconds(5)), setup: desk,
      steps: [Step(1, .clientConnected(shell, shellID), ["publish"], shielded: [], active: false, sessions: [])]),
    Scenario(
      name: "an unidentified client is quarantined; identified later as allowed, its quarantine ends",
      policy: policy(allow: [allowShell], quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(1, .clientConnected(shell, nil), startShieldingW1(kind: "quarantine", client: shell) + ["publish"]),
        Step(
          2, .clientIdentified(shell, shellID),
          [
            "audit session-end session=1 kind=quarantine client=0xa00000 why='client is allowed'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], active: false, sessions: []),
      ]),
    Scenario(
      name: "a quarantined client that exits ends its quarantine",
      policy: policy(quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(1, .clientConnected(grab, grabberID), startShieldingW1(kind: "quarantine", client: grab) + ["publish"]),
        Step(
          2, .clientGone(grab),
          [
            "audit session-end session=1 kind=quarantine client=0x600000 why='client exited'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "publish",
          ],
          shielded: [], sessions: []),
      ]),
    Scenario(
      name: "a known capturer gets a known session, not a quarantine",
      policy: policy(quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(
          1, .clientConnected(ff, ffmpegID),
          startShieldingW1(kind: "known", client: ff) + ["notify true [0x100]", "publish"],
          sessions: ["#1 known 0x800000 req=0 pinned"])
      ]),
    Scenario(
      name: "a quarantined client's capture request starts a capture session",
      policy: policy(quarantine: .seconds(5)), setup: desk,
      steps: [
        Step(1, .clientConnected(grab, grabberID), startShieldingW1(kind: "quarantine", client: grab) + ["publish"]),
        Step(
          2, .captureRequest(grab, CaptureRequest(kind: "GetImage")),
          [
            "audit capture-request client=0x600000 request=GetImage class=ordinary",
            "audit session-start session=2 kind=request client=0x600000 request=GetImage", "notify true [0x100]",
            "publish",
          ],
          capturing: true,
          sessions: ["#1 quarantine 0x600000 req=0 until 6", "#2 request 0x600000 req=1 until 4"]),
      ]),
  ]

  static let compositorScenarios: [Scenario] = [
    Scenario(
      name: "a non-allowed compositor keeps a pinned session; linger after it is replaced",
      policy: policy(), setup: desk + [.clientConnected(comp, picomID)],
      steps: [
        Step(
          1, .compositorChanged(comp),
          ["audit compositor client=0xc00000"] + startShieldingW1(kind: "compositor", client: comp)
            + ["notify true [0x100]", "publish"],
          shielded: [w1], capturing: true, deadline: Deadline.none, sessions: ["#1 compositor 0xc00000 req=0 pinned"]),
        Step(100, .tick, [], shielded: [w1]),
        Step(101, .compositorChanged(nil), ["audit compositor client=none", "publish"], deadline: .at(103)),
        Step(103, .tick, lingerEndW1(kind: "compositor", client: comp), shielded: [], sessions: []),
      ]),
    Scenario(
      name: "an allowed compositor has no session",
      policy: policy(allow: [allowPicom]), setup: desk + [.clientConnected(comp, picomID)],
      steps: [
        Step(
          1, .compositorChanged(comp), ["audit compositor client=0xc00000", "publish"],
          shielded: [], capturing: false, sessions: [])
      ]),
    Scenario(
      name: "an unidentified compositor identified later as allowed loses its session",
      policy: policy(allow: [allowPicom]), setup: desk + [.clientConnected(comp, nil)],
      steps: [
        Step(
          1, .compositorChanged(comp),
          ["audit compositor client=0xc00000"] + startShieldingW1(kind: "compositor", client: comp)
            + ["notify true [0x100]", "publish"]),
        Step(
          2, .clientIdentified(comp, picomID),
          [
            "audit session-end session=1 kind=compositor client=0xc00000 why='client is allowed'", "unshield 0x100",
            "audit unshield window=0x100 reason='no capture session'", "notify false [0x100]", "publish",
          ],
          shielded: [], capturing: false, sessions: []),
      ]),
    Scenario(
      name: "the compositor exiting ends its pin; linger follows",
      policy: policy(), setup: desk + [.clientConnected(comp, picomID)],
      steps: [
        Step(
          1, .compositorChanged(comp),
          ["audit compositor client=0xc00000"] + startShieldingW1(kind: "compositor", client: comp)
            + ["notify true [0x100]", "publish"]),
        Step(2, .clientGone(comp), ["publish"], shielded: [w1], deadline: .at(4)),
        Step(4, .tick, lingerEndW1(kind: "compositor", client: comp), shielded: []),
      ]),
  ]

  struct QuarantineTargetCase: Sendable, CustomTestStringConvertible {
    var name: String
    var policy: Policy
    var setup: [Engine.Event]
    var expected: [WindowID]
    var testDescription: String { name }
  }

  static let unknownWindow = window(w3, client: ff, known: false)
  static let bankWindow = window(w4, class: "Firefox", title: "My Bank")

  static let quarantineTargetCases: [QuarantineTargetCase] = [
    QuarantineTargetCase(
      name: "idle desktop: every secure window (tag and rule)",
      policy: policy(secure: [bankRule], quarantine: .seconds(1)),
      setup: desk + [.windowAppeared(bankWindow)], expected: [w1, w2, w4]),
    QuarantineTargetCase(
      name: "a window whose facts are unknown is not armed (shielded as provisional)",
      policy: policy(quarantine: .seconds(1)),
      setup: desk + [.windowAppeared(unknownWindow)], expected: [w1]),
    QuarantineTargetCase(
      name: "manually unshielded window is armed (a session clears the override)",
      policy: policy(quarantine: .seconds(1)),
      setup: desk + [.manualOverride(w1, shielded: false, by: "test")], expected: [w1]),
    QuarantineTargetCase(
      name: "quarantine off: nothing", policy: policy(), setup: desk, expected: []),
    QuarantineTargetCase(
      name: "shields already up (someone captures): nothing", policy: policy(quarantine: .seconds(1)),
      setup: desk + [.captureRequest(grab, CaptureRequest(kind: "GetImage"))], expected: []),
    QuarantineTargetCase(
      name: "paused: nothing", policy: policy(quarantine: .seconds(1)),
      setup: desk + [.pause(until: nil, by: "test")], expected: []),
    QuarantineTargetCase(
      name: "when: always (shields up anyway): nothing", policy: policy(when: .always, quarantine: .seconds(1)),
      setup: desk, expected: []),
    QuarantineTargetCase(
      name: "no secure window: nothing", policy: policy(quarantine: .seconds(1)),
      setup: [.windowAppeared(plainWindow)], expected: []),
  ]

  /// `capture.quarantine` (new clients) and the compositor.
  @Suite struct Quarantine {
    @Test("quarantine", arguments: quarantineScenarios)
    fileprivate func quarantine(_ s: Scenario) { _ = run(s) }

    @Test("compositor", arguments: compositorScenarios)
    fileprivate func compositor(_ s: Scenario) { _ = run(s) }

    /// The RECORD pump maps `quarantineTargets` the moment it reads a ClientStarted, before
    /// the engine hears of the client: they must be exactly the windows the engine then
    /// shields for it, but for windows whose facts are still unknown (those become
    /// provisional and are shielded by the loop, which creates their shields anyway).
    @Test("quarantine targets are what a new client's connection shields", arguments: quarantineTargetCases)
    func quarantineTargetsMatchTheEngine(_ c: QuarantineTargetCase) {
      var e = Engine(policy: c.policy)
      for ev in c.setup { _ = e.handle(ev, now: t(0)) }
      let targets = e.quarantineTargets
      #expect(targets == c.expected, "\(c.name)")
      let fx = e.handle(.clientConnected(ClientID(0xe0_0000), nil), now: t(0.5))
      let shielded = fx.compactMap { if case .shield(let w) = $0 { return w } else { return nil } }
      let unknown = Set(e.windows.values.filter { !$0.info.propertiesKnown }.map(\.info.id))
      #expect(Set(targets).isSubset(of: shielded), "\(c.name): armed \(targets), engine shields \(shielded)")
      #expect(Set(shielded).subtracting(targets).isSubset(of: unknown), "\(c.name): \(shielded) vs \(targets)")
    }
  }
}
