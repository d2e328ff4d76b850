// The loop's routing on fakes, no X server: a window appears on the fake main connection
// (`WindowTracker`), gets tagged, a capture request comes in, and the engine's shield effect
// reaches the fake shield connection through the loop's routing (`EffectRouting`, as
// `WatcherLoop.apply` and `perform` use it); the capture ends, and the shield goes at the
// driver's commit. The recorded requests come from a fake record source (`FakeRecordSource`)
// through the capture bridge's own routing (`CaptureBridge.drain`, the rig as its host, as
// `WatcherLoop` is in the daemon).

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

    /// The capture bridge, and who each client is (the fake's /proc), the clients asked
    /// about, the window manager, how often the window events were read before a decision.
    let bridge = CaptureBridge(detector: nil, readsPixmaps: false, tuning: WatcherTuning())
    var people: [UInt32: ClientIdentity] = [:]
    var identified: [UInt32] = []
    var windowManager: ClientID?
    var windowsKnown = 0

    init(policy: Policy) {
      tracker = WindowTracker(connection: main, atoms: atoms)
      engine = Engine(policy: policy)
      shieldX.windows[shieldX.root] = (24, 0)
      shieldX.windows[LoopRoutingTests.app] = (24, shieldX.root)
      driver = ShieldDriver(connection: shieldX, failMode: .open, input: .passthrough, label: "Protected")
      shieldX.reset()
    }

    func apply(_ event: Engine.Event) { route(event) }

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

  /// The app's window, tracked and tagged, its client connected: as the loop does it.
  static func trackTaggedApp(_ r: Rig) throws {
    r.main.windows[Self.app] = .init()
    r.main.tag(Self.app, atoms: r.atoms)
    let info = try #require(r.tracker.read([Self.app], initial: false, wantTitle: false).infos.first)
    r.tracker.add(info)
    r.route(.windowAppeared(info))
  }

  static let keepass = ClientIdentity(pid: 10, exe: "/usr/bin/keepassxc", comm: "k", uid: 1)
  static let importTool = ClientIdentity(pid: 20, exe: "/usr/bin/import", comm: "i", uid: 1)

  @Test func aRecordedGetImageOfTheRootShieldsUntilItsClientsEndAndTheLinger() throws {
    var policy = Policy()
    policy.when = .capturing
    let r = Rig(policy: policy)
    r.people = [0x40_0000: Self.keepass, Self.grabber.base: Self.importTool]
    let source = FakeRecordSource()
    // The app connected (a ClientStarted record), then its window is tracked and tagged.
    source.batches = [[.clientStarted(ClientID(0x40_0000))]]
    r.bridge.drain(source, host: r)
    #expect(r.engine.clients[ClientID(0x40_0000)]?.identity == Self.keepass)
    try Self.trackTaggedApp(r)
    #expect(r.engine.windows[Self.app]?.reason.isSecure == true)
    #expect(r.shieldX.windowRequests.isEmpty)
    // The capture tool connects and reads the root, as RECORD delivers it: one batch.
    r.windowsKnown = 0
    source.batches = [
      [.clientStarted(Self.grabber), .request(Self.grabber, CaptureRequest(kind: "GetImage", target: r.shieldX.root))]
    ]
    r.bridge.drain(source, host: r)
    #expect(source.batches.isEmpty && source.watchesOwnWindows)  // a secure window exists
    #expect(r.identified == [0x40_0000, Self.grabber.base])
    #expect(r.bridge.identities[Self.grabber.base] == Self.importTool)
    #expect(r.engine.clients[Self.grabber]?.identity == Self.importTool)
    #expect(r.windowsKnown == 1)  // once per batch, before the first decision
    let shield = try #require(r.driver.shields[Self.app])
    #expect(r.shieldX.windowRequests.prefix(2) == [.create(shield, parent: Self.app, checked: true), .map(shield)])
    #expect(r.audits.contains("session-start") && r.audits.contains("shield"))
    #expect(source.repliesRead == 3)  // counted for the record timing (`RecordTiming.read`)
    // Its end (a ClientDied record): the identity is forgotten, the shield stays for the linger.
    r.shieldX.reset()
    source.batches = [[.clientDied(Self.grabber)]]
    r.bridge.drain(source, host: r)
    #expect(r.bridge.identities[Self.grabber.base] == nil && r.engine.departed.contains(Self.grabber))
    #expect(r.engine.shielded.contains(Self.app))
    r.now = r.now + .seconds(60)
    r.route(.tick)
    #expect(!r.engine.shielded.contains(Self.app))
    r.driver.commitUnmaps()
    #expect(r.shieldX.windowRequests.contains(.unmap(shield)))
  }

  @Test func theWindowManagersReparentingIsNotCaptureAnotherClientsIs() throws {
    let r = Rig(policy: Policy())
    r.people = [0x40_0000: Self.keepass, Self.grabber.base: Self.importTool]
    let wm = ClientID(0x20_0000)
    r.windowManager = wm
    let source = FakeRecordSource()
    source.batches = [[.clientStarted(ClientID(0x40_0000))]]
    r.bridge.drain(source, host: r)
    try Self.trackTaggedApp(r)
    let reparent = CaptureRequest(kind: "ReparentWindow", target: Self.app)
    source.batches = [[.request(wm, reparent)]]
    r.bridge.drain(source, host: r)
    #expect(r.engine.clients[wm] == nil && r.engine.sessions.isEmpty && !r.identified.contains(wm.base))
    // Another client's: a client the daemon never saw connect is identified, then its session.
    source.batches = [[.request(Self.grabber, reparent)]]
    r.bridge.drain(source, host: r)
    #expect(r.engine.clients[Self.grabber]?.identity == Self.importTool)
    #expect(r.engine.sessions.count == 1 && r.engine.shielded.contains(Self.app))
  }

  @Test func aShieldThePumpPutUpEarlyComesDownWhenTheEngineDoesNotWantIt() throws {
    var policy = Policy()
    policy.when = .capturing
    policy.quarantine = .seconds(1)
    let r = Rig(policy: policy)
    r.people = [0x40_0000: Self.keepass, Self.grabber.base: Self.importTool]
    let source = FakeRecordSource()
    source.batches = [[.clientStarted(ClientID(0x40_0000))]]
    r.bridge.drain(source, host: r)
    try Self.trackTaggedApp(r)
    r.driver.prepare(Self.app)  // as `EffectRouting.toPrepare` has the loop do
    let shield = try #require(r.driver.shields[Self.app])
    r.now = r.now + .seconds(5)  // the app's own quarantine is over
    r.route(.tick)
    #expect(!r.engine.shielded.contains(Self.app))
    // Armed before the user paused: the pump maps the shield on the next ClientStarted, and
    // the engine, paused, does not want it.
    r.route(.pause(until: nil, by: "user"))
    source.batches = [[.clientStarted(Self.grabber)]]
    source.firedNext = [Self.app]
    r.driver.commitUnmaps()
    r.shieldX.reset()
    r.bridge.drain(source, host: r)
    #expect(r.engine.clients[Self.grabber]?.identity == Self.importTool)
    #expect(!r.engine.shielded.contains(Self.app))
    r.driver.commitUnmaps()
    #expect(r.shieldX.windowRequests == [.unmap(shield)])
  }

  @Test func aNewTopLevelGetsItsShieldAtOnceThroughTheRoutingWhileShieldsAreUp() throws {
    var policy = Policy()
    policy.when = .always
    let r = Rig(policy: policy)
    let fresh: WindowID = 0x40_0009
    r.shieldX.windows[fresh] = (24, r.shieldX.root)
    r.shieldX.reset()
    r.route(.topLevelCreated(fresh))
    #expect(r.shieldX.windowRequests.contains { if case .create(_, fresh, _) = $0 { true } else { false } })
    // Under server enforcement the module protects it: nothing is mapped.
    let other: WindowID = 0x40_000a
    r.shieldX.reset()
    for e in r.engine.handle(.topLevelCreated(other), now: r.now) {
      #expect(EffectRouting.carryOut(e, driver: r.driver, serverEnforced: true) == .done)
    }
    #expect(r.shieldX.requests.isEmpty)
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
    #expect(
      EffectRouting.leavesEngineAsItWas(.topLevelCreated(1)) && EffectRouting.leavesEngineAsItWas(.earlyShieldsUp([])))
    #expect(!EffectRouting.leavesEngineAsItWas(.tick))
  }
}

/// RECORD as the capture bridge reads it, on a fake: each `drain` hands over the next batch of
/// records as the pump delivered them (more batches queued: `moreAvailable`), with the shields
/// the pump put up among them (`firedNext`).
final class FakeRecordSource: RecordSource {
  let catalog = CaptureCatalog.standard.resolved(extensions: [:])
  var batches: [[DetectorEvent]] = []
  var firedNext: Set<WindowID> = []
  private(set) var repliesRead = 0
  private(set) var lastFired: Set<WindowID> = []
  var lastLaunches: [String?] = []
  var watchesOwnWindows = false
  private(set) var pokes = 0
  var moreAvailable: Bool { !batches.isEmpty }

  func poke() { pokes += 1 }
  func drain(isSecure: (UInt32) -> Bool) -> [DetectorEvent] {
    lastFired = firedNext
    firedNext = []
    guard !batches.isEmpty else { return [] }
    let batch = batches.removeFirst()
    repliesRead += batch.count
    return batch
  }
}

extension LoopRoutingTests.Rig: CaptureHost {
  func mayBeSecure(_ w: WindowID) -> Bool {
    engine.windows[w]?.reason.isSecure ?? (tracker.isPending(w) || driver.isShield(w))
  }
  var hasSecureWindow: Bool { engine.hasSecureWindow }
  var sessionsLive: Bool { !engine.sessions.isEmpty }
  var quarantines: Bool { engine.policy.quarantine != nil }
  func unknownClient(_ c: ClientID) -> Bool { engine.isUnheardOf(c) }
  func countsAsCapture(_ c: ClientID, _ req: CaptureRequest, catalog: ResolvedCaptureCatalog) -> Bool {
    engine.countsAsCapture(
      req, catalog: catalog, pixmapOwner: req.target.map { ClientID($0 & ~0x1F_FFFF) },
      isWindowManager: { c == windowManager })
  }
  func earlyShieldsMapped(_ fired: Set<WindowID>) {
    for t in fired { driver.markMapped(t) }
  }
  func identify(base: UInt32, sample: UInt32?) -> ClientIdentity {
    identified.append(base)
    let id = people[base] ?? ClientIdentity(pid: nil, exe: nil, comm: nil, uid: nil)
    bridge.identities[base] = id
    return id
  }
  func knowWindows() { windowsKnown += 1 }
  func ownReadCapture(_ read: OwnDrawableRead, by c: ClientID, known: [UInt32: DrawableFact], knowWindows: () -> Void)
    -> CaptureRequest?
  { nil }
  func captureReported(_ c: ClientID, _ req: CaptureRequest) {}
}
