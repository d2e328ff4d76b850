import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension EngineTests {
  // MARK: Launches (`capture.quarantineOnLaunch`)

  /// A timed event for a launch case.
  struct TimedEvent: Sendable {
    var at: Double
    var event: Engine.Event
  }

  struct LaunchCase: Sendable, CustomTestStringConvertible {
    var name: String
    var policy: Policy
    var events: [TimedEvent]
    /// After the last event.
    var shielded: Set<WindowID>
    var launches: Int
    var testDescription: String { name }
  }

  static func aged(_ id: ClientIdentity, _ age: Double?) -> ClientIdentity {
    var id = id
    id.processAge = age
    return id
  }

  static func launchPolicy(onLaunch: Bool = true, quarantine: PolicyDuration? = .seconds(1)) -> Policy {
    var p = policy(allow: [allowShell], quarantine: quarantine)
    p.quarantineOnLaunch = onLaunch
    return p
  }

  static let tool = ClientID(0xc0_0000)
  static let deskAt0 = desk.map { TimedEvent(at: 0, event: $0) }

  static let launchCases: [LaunchCase] = [
    LaunchCase(
      name: "a launch shields the secure windows before any client connects", policy: launchPolicy(),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil))], shielded: [w1], launches: 1),
    LaunchCase(
      name: "no client comes: the launch ends with the quarantine duration", policy: launchPolicy(),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil)), TimedEvent(at: 2.01, event: .tick)],
      shielded: [], launches: 0),
    LaunchCase(
      name: "the launched process connects and is allowed: shields come down", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [], launches: 0),
    LaunchCase(
      name: "identity with the connection (quarantine path off): the launch is matched too", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, aged(shellID, 0.01))),
      ], shielded: [], launches: 0),
    LaunchCase(
      name: "a new connection of a long-running process does not end a launch", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 600))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "a young process's second connection does not end a later launch (one libxcb load per process)",
      policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
        TimedEvent(at: 1.1, event: .clientGone(shell)),
        TimedEvent(at: 1.2, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.21, event: .clientConnected(grab, nil)),
        TimedEvent(at: 1.211, event: .clientIdentified(grab, aged(shellID, 0.22))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "a process started after the launch is not its client", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.5, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.5, event: .clientIdentified(shell, aged(shellID, 0.1))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "no process age (remote client, process gone): the launch stays (fail safe)", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, nil))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "two launches, one client: the other launch keeps the shields up", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.001, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "the launched tool is not allowed: its own quarantine holds the shields", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.004, event: .clientConnected(tool, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(tool, aged(grabberID, 0.01))),
      ], shielded: [w1], launches: 0),
    LaunchCase(
      name: "a program start is matched by a young client running that program", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: "gnome-shell")),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [], launches: 0),
    LaunchCase(
      name: "a program start is not matched by a client running another program", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: "xwd")),
        TimedEvent(at: 1.004, event: .clientConnected(shell, nil)),
        TimedEvent(at: 1.005, event: .clientIdentified(shell, aged(shellID, 0.01))),
      ], shielded: [w1], launches: 1),
    LaunchCase(
      name: "quarantineOnLaunch false: a launch does nothing", policy: launchPolicy(onLaunch: false),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil))], shielded: [], launches: 0),
    LaunchCase(
      name: "quarantine off: a launch does nothing", policy: launchPolicy(quarantine: nil),
      events: deskAt0 + [TimedEvent(at: 1, event: .clientLaunching(program: nil))], shielded: [], launches: 0),
    LaunchCase(
      name: "paused: a launch shields nothing", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 0.5, event: .pause(until: nil, by: "test")),
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
      ], shielded: [], launches: 1),
    LaunchCase(
      name: "a reload that turns the quarantine off drops pending launches", policy: launchPolicy(),
      events: deskAt0 + [
        TimedEvent(at: 1, event: .clientLaunching(program: nil)),
        TimedEvent(at: 1.1, event: .policyReplaced(launchPolicy(quarantine: nil))),
      ], shielded: [], launches: 0),
  ]

  /// `capture.quarantineOnLaunch`.
  @Suite struct Launches {
    /// `capture.quarantineOnLaunch`: the shell reports processes loading libxcb; the engine
    /// keeps the shields up from then until a client young enough to be that process is
    /// identified, or until the quarantine duration ends.
    @Test("launches", arguments: launchCases)
    func launch(_ c: LaunchCase) {
      var e = Engine(policy: c.policy)
      for te in c.events { _ = e.handle(te.event, now: t(te.at)) }
      #expect(e.shielded == c.shielded, "\(c.name)")
      #expect(e.launches.count == c.launches, "\(c.name)")
    }

    @Test func launchEndsAreAudited() {
      var e = Engine(policy: launchPolicy())
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.clientLaunching(program: nil), now: t(1))
      _ = e.handle(.clientLaunching(program: nil), now: t(1.5))
      _ = e.handle(.clientConnected(shell, nil), now: t(1.52))
      let matched = audits(e.handle(.clientIdentified(shell, aged(shellID, 0.03)), now: t(1.53)), "launch-end")
      #expect(matched.count == 1)
      #expect(matched.first?["why"] == .string("client identified"))
      #expect(matched.first?["exe"] == .string("/usr/bin/gnome-shell"))
      #expect(e.launches.count == 1)  // the launch at 1.0 s: the shell's process started after it
      let expired = audits(e.handle(.tick, now: t(2.01)), "launch-end")
      #expect(expired.count == 1)
      #expect(expired.first?["why"] == .string("no client connected"))
      #expect(e.launches.isEmpty && e.shielded.isEmpty)
    }

    /// A client ends the start of its own program before an earlier libxcb open (which may
    /// be another process's), and the audit record names the program.
    @Test func aClientPrefersItsOwnProgramsStart() {
      var e = Engine(policy: launchPolicy())
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      _ = e.handle(.clientLaunching(program: nil), now: t(1))
      _ = e.handle(.clientLaunching(program: "gnome-shell"), now: t(1.001))
      _ = e.handle(.clientConnected(shell, nil), now: t(1.004))
      let ended = audits(e.handle(.clientIdentified(shell, aged(shellID, 0.01)), now: t(1.005)), "launch-end")
      #expect(ended.count == 1)
      #expect(ended.first?["program"] == .string("gnome-shell"))
      #expect(e.launches.map(\.program) == [nil])
    }

    @Test func aLaunchIsADeadline() {
      var e = Engine(policy: launchPolicy())
      for ev in desk { _ = e.handle(ev, now: t(0)) }
      let fx = e.handle(.clientLaunching(program: nil), now: t(1))
      #expect(fx.contains(.shield(w1)))
      #expect(e.nextDeadline == t(2))
      #expect(e.shieldsActive && !e.isCapturing)  // shields up, nobody captures yet
      #expect(e.quarantineTargets.isEmpty)  // up already: nothing to arm
    }
  }
}
