// The loop's routing on fakes, no X server: a window appears on the fake main connection
// (`WindowTracker`), gets tagged, a capture request comes in (as the capture bridge hands it to
// the engine), and the engine's shield effect reaches the fake shield connection through the
// loop's routing (`EffectRouting`, as `WatcherLoop.apply` and `perform` use it); the capture
// ends, and the shield goes at the driver's commit.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

@Suite struct LoopRoutingTests {
  static let app: WindowID = 0x40_0001
  static let grabber = ClientID(0x60_0000)

  /// The loop's parts on fakes: tracker on the main connection, engine, driver on the shield
  /// connection. `route` does what `WatcherLoop.apply` does with the engine's effects.
  final class Rig {
    let main = FakeWindowConnection()
    let shieldX = RecordingConnection()
    let atoms = WindowTrackerTests.atoms
    let tracker: WindowTracker
    var engine: Engine
    let driver: ShieldDriver
    var audits: [String] = []
    var gone: [WindowID] = []
    var now = MonotonicTime.seconds(100)

    init(policy: Policy) {
      tracker = WindowTracker(connection: main, atoms: atoms)
      engine = Engine(policy: policy)
      shieldX.windows[shieldX.root] = (24, 0)
      shieldX.windows[LoopRoutingTests.app] = (24, shieldX.root)
      driver = ShieldDriver(connection: shieldX, failMode: .open, input: .passthrough, label: "Protected")
      shieldX.reset()
    }

    func route(_ event: Engine.Event) {
      let effects = engine.handle(event, now: now)
      let (raise, rest) = EffectRouting.ordered(effects)
      for e in raise + rest {
        switch EffectRouting.carryOut(e, driver: driver, serverEnforced: false) {
        case .done: break
        case .targetGone(let w): gone.append(w)
        case .other(.audit(let r)): audits.append(r.event)
        case .other: break
        }
      }
    }
  }

  @Test func aTaggedWindowIsShieldedWhileACaptureRunsThroughTheLoopsRouting() throws {
    var policy = Policy()
    policy.when = .capturing
    let r = Rig(policy: policy)
    // A window appears (untagged), as `track` reads it.
    r.main.windows[Self.app] = .init()
    let info = try #require(r.tracker.read([Self.app], initial: false, wantTitle: false).infos.first)
    r.tracker.add(info)
    r.route(.clientConnected(info.client!, ClientIdentity(pid: 10, exe: "/usr/bin/keepassxc", comm: "k", uid: 1)))
    r.route(.windowAppeared(info))
    #expect(r.shieldX.windowRequests.isEmpty)
    // It gets tagged: the PropertyNotify's new facts go to the engine.
    r.main.tag(Self.app, atoms: r.atoms)
    let tagged = try #require(r.tracker.propertyChanged(Self.app, atom: r.atoms.secure, deleted: false))
    r.tracker.tracked[Self.app] = tagged
    r.route(.windowChanged(tagged))
    #expect(r.engine.windows[Self.app]?.reason.isSecure == true)
    #expect(r.shieldX.windowRequests.isEmpty)  // shield.when: capturing, nothing captures yet
    // A capture request comes from the bridge: the shield goes up on the shield connection.
    r.route(.clientConnected(Self.grabber, ClientIdentity(pid: 20, exe: "/usr/bin/import", comm: "i", uid: 1)))
    r.route(.captureRequest(Self.grabber, CaptureRequest(kind: "GetImage", target: r.shieldX.root)))
    let shield = try #require(r.driver.shields[Self.app])
    #expect(r.shieldX.windowRequests.prefix(2) == [.create(shield, parent: Self.app, checked: true), .map(shield)])
    #expect(r.audits.contains("session-start") && r.audits.contains("shield"))
    #expect(r.gone.isEmpty)
    // The capture tool goes; after the linger the shield is taken down at the commit.
    r.shieldX.reset()
    r.route(.clientGone(Self.grabber))
    r.now = r.now + .seconds(60)
    r.route(.tick)
    #expect(!r.engine.shielded.contains(Self.app))
    r.driver.commitUnmaps()
    #expect(r.shieldX.windowRequests.contains(.unmap(shield)))
  }

  @Test func aShieldWhoseTargetIsGoneIsReportedAndServerEnforcementMapsNothing() {
    let r = Rig(policy: Policy())
    #expect(
      EffectRouting.carryOut(.shield(0x70_0001), driver: r.driver, serverEnforced: false) == .targetGone(0x70_0001))
    r.shieldX.reset()
    #expect(EffectRouting.carryOut(.shield(Self.app), driver: r.driver, serverEnforced: true) == .done)
    #expect(r.shieldX.requests.isEmpty)
    let (raise, rest) = EffectRouting.ordered([.publishState, .unshield(1), .shield(2), .shield(3)])
    #expect(raise == [.shield(2), .shield(3)])
    #expect(rest == [.publishState, .unshield(1)])
    #expect(EffectRouting.changesShields(rest))
    #expect(!EffectRouting.changesShields([.publishState]))
  }
}
