// The capture bridge's routing: RECORD's records (`DetectorEvent` values from a
// `RecordSource`) in, engine events out through the loop (`CaptureHost`). Runs on the loop's
// thread; `LoopRoutingTests` runs it on a fake record source.

/// What the capture bridge reads from RECORD (real: `CaptureDetector`; tests:
/// `FakeRecordSource`): the records as the pump delivered them, and the shields the pump
/// put up on a ClientStarted among them.
protocol RecordSource: AnyObject {
  /// The catalog, bound to this server's extension opcodes.
  var catalog: ResolvedCaptureCatalog { get }
  /// RECORD replies read since the start (the record stream's business, `RecordTiming`).
  var repliesRead: Int { get }
  /// Whether the last `drain` left records to read (its budget ran out).
  var moreAvailable: Bool { get }
  /// Whether reads of a client's own drawables are reported (`DetectorEvent.ownRead`).
  var watchesOwnWindows: Bool { get set }
  /// The shields the RECORD thread put up on a ClientStarted among the last `drain`'s
  /// records (quarantine armed), and the launches it saw (`Engine.Event.clientLaunching`).
  var lastFired: Set<WindowID> { get }
  var lastLaunches: [String?] { get }
  /// Asks the server to flush pending records (a cheap round trip).
  func poke()
  /// Every record available now, in order. `isSecure(window)`: whether a manual
  /// redirection of the window bypasses a shield.
  func drain(isSecure: (UInt32) -> Bool) -> [DetectorEvent]
}

extension CaptureDetector: RecordSource {}

/// What the capture bridge asks of the loop: the engine's view (narrow queries: the engine
/// is a large value, never copied per record), the one identity lookup, the window events
/// that came before the records, and `apply` (events in, effects out).
protocol CaptureHost: AnyObject {
  /// Whether `w` is, or may be, secure: the engine's decision; a window not tracked yet
  /// counts when its tracking is deferred, and so does one of the daemon's shields.
  func mayBeSecure(_ w: WindowID) -> Bool
  /// Whether the engine holds any window secure (reads of own windows matter then).
  var hasSecureWindow: Bool { get }
  /// Whether the engine has capture sessions (the server is poked while it has).
  var sessionsLive: Bool { get }
  /// Whether the policy quarantines new clients.
  var quarantines: Bool { get }
  /// Whether a request of `c` finds the engine without the client: connected before the
  /// daemon started, or its ClientStarted was missed (not one that went already).
  func unknownClient(_ c: ClientID) -> Bool
  /// Whether a recorded request reaches the engine (`Engine.countsAsCapture`).
  func countsAsCapture(_ c: ClientID, _ req: CaptureRequest, catalog: ResolvedCaptureCatalog) -> Bool
  /// The RECORD thread put up these shields: up on the server (`ShieldDriver.markMapped`).
  func earlyShieldsMapped(_ fired: Set<WindowID>)
  /// The one identity lookup (remembered in `CaptureBridge.identities`).
  func identify(base: UInt32, sample: UInt32?) -> ClientIdentity
  /// Reads the window events that came before and tracks the windows whose tracking was
  /// deferred, so that a decision sees every window.
  func knowWindows()
  /// The capture request a read of the client's own drawable amounts to, or nil.
  func ownReadCapture(_ read: OwnDrawableRead, by c: ClientID, known: [UInt32: DrawableFact], knowWindows: () -> Void)
    -> CaptureRequest?
  /// The engine had the capture request: a redirection of one of the daemon's shields
  /// replaces it.
  func captureReported(_ c: ClientID, _ req: CaptureRequest)
  func apply(_ event: Engine.Event)
}

extension CaptureBridge {
  /// Reads what `source` has and routes it: the server poked when due, the pump's shields
  /// and launches, then each record in order (clients identified as they connect, capture
  /// requests filtered by the engine's rule and handed to it), until nothing is left.
  func drain(_ source: RecordSource, host: CaptureHost) {
    let now = Clock.now()
    if timing.pokeDue(now, sessionsLive: host.sessionsLive) { source.poke() }
    let readBefore = source.repliesRead
    defer { timing.read(source.repliesRead - readBefore, now: Clock.now()) }
    // Reads of own windows matter while a secure window exists.
    source.watchesOwnWindows = host.hasSecureWindow
    repeat {
      // A window not tracked yet might be secure: a manual redirection of it counts, and of
      // a shield.
      let events = source.drain(isSecure: host.mayBeSecure)
      // Shields the pump put up on a ClientStarted among these records: up on the server.
      let fired = source.lastFired
      host.earlyShieldsMapped(fired)
      // Processes that loaded libxcb: clients about to connect (the pump fired for them).
      for program in source.lastLaunches { host.apply(.clientLaunching(program: program)) }
      defer {
        // Put up for a client the engine then did not quarantine (say, it had gone again):
        // down again, as the engine wants.
        if !fired.isEmpty { host.apply(.earlyShieldsUp(fired.sorted())) }
      }
      // Decide with every window known: read the window events that came before and track
      // the windows whose tracking was deferred (once per batch of records).
      var windowsKnown = false
      func knowWindows() {
        guard !windowsKnown else { return }
        windowsKnown = true
        host.knowWindows()
      }
      for e in events { route(e, source: source, host: host, knowWindows: knowWindows) }
    } while source.moreAvailable
  }

  private func route(_ e: DetectorEvent, source: RecordSource, host: CaptureHost, knowWindows: () -> Void) {
    switch e {
    case .clientStarted(let c):
      timing.clientStarted(Clock.now())
      if host.quarantines {
        // Quarantine: the pump has put the armed shields up already; shield whatever else
        // the engine wants (one MapWindow each, no round trip, flushed by apply), then
        // identify (a round trip), then the rest.
        host.apply(.clientConnected(c, nil))
        let id = host.identify(base: c.base, sample: nil)
        knowWindows()
        host.apply(.clientIdentified(c, id))
      } else {
        // Identify first: short-lived tools are gone by the time anyone asks later, and a
        // lookup behind another request can get stuck behind the tool's GrabServer.
        let id = host.identify(base: c.base, sample: nil)
        knowWindows()
        host.apply(.clientConnected(c, id))
      }
    case .clientDied(let c):
      knowWindows()
      identities[c.base] = nil
      host.apply(.clientGone(c))
    case .request(let c, let req):
      guard host.countsAsCapture(c, req, catalog: source.catalog) else { return }
      report(c, req, host: host, knowWindows: knowWindows)
    case .ownRead(let c, let read, let known):
      // A read of an own drawable (only while a secure window exists): capture when the
      // window read overlaps a secure window. Window events stay batched unless a
      // window's area is compared: most of these are copies toolkits make all the time.
      if let req = host.ownReadCapture(read, by: c, known: known, knowWindows: knowWindows) {
        report(c, req, host: host, knowWindows: knowWindows)
      }
    }
  }

  /// Hands a capture request to the engine (identifying its client first when needed).
  private func report(_ c: ClientID, _ req: CaptureRequest, host: CaptureHost, knowWindows: () -> Void) {
    if identities[c.base] == nil, host.unknownClient(c) {
      // Connected before we started, or its ClientStarted was missed: identify now. (A
      // client that went already is not connected again: the engine detaches its session.)
      let id = host.identify(base: c.base, sample: nil)
      knowWindows()
      host.apply(.clientConnected(c, id))
    }
    knowWindows()
    // A prelude (MIT-SHM Attach, a redirection, ...) only wakes an idle session (`capture.idle`).
    host.apply(CaptureCatalog.preludeKinds.contains(req.kind) ? .capturePrelude(c, req) : .captureRequest(c, req))
    host.captureReported(c, req)
  }
}
