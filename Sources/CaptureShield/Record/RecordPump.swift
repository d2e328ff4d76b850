// The quarantine fast path: RECORD read on a thread of its own, and shields armed in advance.
//
// Quarantine races a one-shot tool: scrot grabs the server about 1 ms after it connects, and
// a shield mapped after that waits until the screenshot is taken. The daemon's loop reads
// the ClientStarted record at once when it is idle, but it is often busy: every client that
// connects costs it an identity lookup, audit lines and a state update (about 0.9 ms), so on
// a desktop where clients come and go (a panel applet, a status poller, a test harness
// reading the daemon's state) a tool launched during that work won the race about one time
// in ten. Measured with a RECORD client of our own: in every leaking run the daemon's
// MapWindow came after the tool's GrabServer because the loop was still handling the client
// before.
//
// So, while quarantine is on, a pump thread reads the RECORD data connection. The engine
// decides ahead of time which windows a new client's connection would shield
// (`Engine.quarantineTargets`); the loop arms the pump with their prepared shields. When the
// pump reads a ClientStarted of a client that is not ours, it maps the armed shields on the
// shield connection and flushes before it even queues the record: one MapWindow per window,
// on a thread that does nothing else. The loop then handles the record as before; the engine
// shields the same windows (the driver's repeated MapWindow does nothing), and any armed
// shield the engine did not want after all is taken down again (`fired`).
//
// The loop's own shield removals are deferred to `commit`, which runs under the pump's lock
// and refuses while a ClientStarted it has not taken is queued: a shield is never taken down
// between a new client's connection and the loop's decision about it.
//
// With `capture.quarantineOnLaunch` the pump also reads a `LaunchWatch`: a process loading
// libxcb fires the armed shields the same way, a few milliseconds before it can connect, and
// the launch is queued for the loop like a ClientStarted (the engine keeps the shields up
// until a client connects or the quarantine duration ends).
//
// With `capture.learn` and a history of capturers, the pump runs without quarantine too:
// its launch watch then sees only the starts of the programs the history marks as
// capturers (`Engine.learnedLaunchPaths`), which fire the armed shields, and a ClientStarted
// fires nothing (`firesOnStart` false): ordinary programs' starts and connections cost
// nothing.
//
// libxcb is thread-safe: the pump only reads the data connection (nobody else does while it
// runs) and only sends MapWindow on the shield connection.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The pump's bookkeeping as a pure value (tested with tables, no thread, no X): the
/// records queued for the loop, which ClientStarted and launches the loop has not taken,
/// what is armed, and what fired. `RecordPump` keeps it behind `Locked<PumpState>` and carries out the
/// shields it returns to map.
struct PumpState {
  /// Resource bases whose ClientStarted does not fire (the daemon's own connections).
  var excluded: Set<UInt32>
  /// Raw RECORD replies read and not yet taken by the loop, in order. An empty element
  /// marks the end of the context (an error reply, or libxcb saying the request is over).
  private(set) var queue: [[UInt8]] = []
  /// ClientStarted records in `queue` (not taken yet).
  private(set) var startsQueued = 0
  /// Launches seen by the launch watch and not taken yet (see `LaunchWatch`).
  private(set) var launchesQueued: [String?] = []
  /// What fires on the next ClientStarted or launch: shield windows on `armedConnection`
  /// (the shield driver's connection), and their targets.
  private(set) var armedConnection: XCBHandle?
  private(set) var armedShields: [UInt32] = []
  private(set) var armedTargets: [WindowID] = []
  /// Targets whose shields the pump mapped and the loop has not been told of.
  private(set) var fired: Set<WindowID> = []
  /// False once stopped.
  var running = true
  /// Whether a ClientStarted fires what is armed (`capture.quarantine`); without it only
  /// launches do (a learned capturer's start: `Engine.learnedLaunchPaths`).
  var firesOnStart = true

  init(excluded: Set<UInt32>, firesOnStart: Bool = true) {
    self.excluded = excluded
    self.firesOnStart = firesOnStart
  }

  /// Queues one reply; returns the shields to map now (a ClientStarted of a client not ours
  /// fires what is armed).
  mutating func deliver(_ bytes: [UInt8]) -> [UInt32] {
    var out: [UInt32] = []
    if bytes.count >= 32 && bytes[1] == RecordedReply.Category.clientStarted.rawValue {
      let base = bytes.withUnsafeBytes { RecordedReply.decode($0)?.idBase ?? 0 }
      if !excluded.contains(base) {
        startsQueued += 1
        if firesOnStart { out = fire() }
      }
    } else if bytes.count >= 32 && bytes[1] == RecordedReply.Category.clientDied.rawValue {
      // Our connection killed by another client: the next client gets its base (and fires).
      excluded.remove(bytes.withUnsafeBytes { RecordedReply.decode($0)?.idBase ?? 0 })
    }
    queue.append(bytes)
    return out
  }

  /// X client processes started: queues the launches; returns the shields to map now.
  mutating func launched(_ programs: [String?]) -> [UInt32] {
    launchesQueued += programs
    return fire()
  }

  /// What is armed, now fired: nothing fires again until the loop arms again.
  private mutating func fire() -> [UInt32] {
    guard armedConnection != nil, !armedShields.isEmpty else { return [] }
    let out = armedShields
    fired.formUnion(armedTargets)
    armedShields = []
    armedTargets = []
    return out
  }

  /// The loop's commit: refused (false) while shields would come down and a ClientStarted
  /// or launch the loop has not taken is queued; else arms `shields` (on `connection`).
  mutating func commit(
    removesShields: Bool, connection: XCBHandle, shields: [UInt32], targets: [WindowID]
  ) -> Bool {
    if removesShields && (startsQueued > 0 || !launchesQueued.isEmpty) { return false }
    armedConnection = connection
    armedShields = shields
    armedTargets = targets
    return true
  }

  /// Nothing fires until the next commit, and what fired is forgotten.
  mutating func disarm() {
    armedConnection = nil
    armedShields = []
    armedTargets = []
    fired = []
  }

  /// Everything queued for the loop, taken.
  mutating func take() -> (replies: [[UInt8]], fired: Set<WindowID>, launches: [String?]) {
    let out = (queue, fired, launchesQueued)
    queue = []
    fired = []
    startsQueued = 0
    launchesQueued = []
    return out
  }
}

/// A libxcb connection handle that may cross threads. libxcb is thread-safe (its own lock
/// orders requests and replies), so sending a request from another thread is sound; what
/// is not thread-safe is our own bookkeeping, which stays on one thread or behind a lock.
struct XCBHandle: @unchecked Sendable, Equatable {
  let raw: OpaquePointer
}

/// Reads the RECORD data connection on its own thread and fires the armed shields on
/// ClientStarted (and on launches, with a `LaunchWatch`). Shared by the pump thread and
/// the daemon's loop; the shared state is `PumpState` behind `Locked<PumpState>`.
final class RecordPump: Sendable {
  private let state: Locked<PumpState>
  private let data: XCBHandle
  private let enableSequence: UInt32
  /// How an error reply on the data connection is reported (thread-safe: `AuditLog` is).
  private let errors: XErrorPolicy
  private let connectionName: String
  /// With `capture.quarantineOnLaunch`: processes loading libxcb fire the armed shields
  /// too, before they can connect. Used by the pump thread only.
  let launchWatch: LaunchWatch?
  /// Whether a ClientStarted fires the armed shields (quarantine), or only launches do.
  let firesOnStart: Bool
  private let finished = DispatchSemaphore(value: 0)
  /// The loop polls `wakeRead`; the pump writes a byte there when it queues something.
  let wakeRead: Int32
  private let wakeWrite: Int32
  /// The pump polls `stopRead` besides the data connection.
  private let stopRead: Int32
  private let stopWrite: Int32

  /// Starts the pump thread on `data` (the RECORD data connection, whose EnableContext
  /// request was `enableSequence`); an error reply there is reported through `errors` as
  /// `connection`.
  init(
    data: OpaquePointer, enableSequence: UInt32, excluded: Set<UInt32>, launchWatch: LaunchWatch? = nil,
    firesOnStart: Bool = true, errors: XErrorPolicy = XErrorPolicy(log: nil), connection: String = "RECORD data"
  ) {
    self.data = XCBHandle(raw: data)
    self.errors = errors
    connectionName = connection
    self.launchWatch = launchWatch
    self.enableSequence = enableSequence
    self.firesOnStart = firesOnStart
    state = Locked<PumpState>(PumpState(excluded: excluded, firesOnStart: firesOnStart))
    var p: [Int32] = [-1, -1]
    _ = pipe(&p)
    let (wr, ww) = (p[0], p[1])
    _ = pipe(&p)
    let (sr, sw) = (p[0], p[1])
    (wakeRead, wakeWrite, stopRead, stopWrite) = (wr, ww, sr, sw)
    for fd in [wakeRead, wakeWrite, stopRead, stopWrite] { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
    let t = Thread { [self] in loop() }
    t.name = "captureshield-record"
    t.start()
  }

  /// Stops the thread and waits for it. Replies it read stay available to `take`.
  func stop() {
    let was = state.withLock { s in
      let was = s.running
      s.running = false
      s.disarm()
      return was
    }
    guard was else { return }
    var b: UInt8 = 1
    _ = write(stopWrite, &b, 1)
    finished.wait()
  }

  deinit {
    stop()
    for fd in [wakeRead, wakeWrite, stopRead, stopWrite] { close(fd) }
  }

  // MARK: The loop's side

  /// Takes every queued reply, the targets fired and the launches seen since the last call.
  func take() -> (replies: [[UInt8]], fired: Set<WindowID>, launches: [String?]) {
    var buf = [UInt8](repeating: 0, count: 256)
    while read(wakeRead, &buf, buf.count) > 0 {}
    return state.withLock { $0.take() }
  }

  func exclude(_ base: UInt32) {
    state.withLock { _ = $0.excluded.insert(base) }
  }

  /// Under the pump's lock, unless a ClientStarted or a launch the loop has not taken is
  /// queued while shields would come down (`removesShields`; then returns false and the
  /// loop must handle the records first): runs `submit` (which queues the deferred removals
  /// on the shield connection, without flushing) and arms `arm` (shield windows on `conn`,
  /// their targets). Requests the pump sends later are queued after the removals, so a
  /// removal never undoes a shield put up for a new client. The caller flushes afterwards,
  /// outside the lock.
  func commit(
    removesShields: Bool, arm: (conn: OpaquePointer, shields: [UInt32], targets: [WindowID]), submit: () -> Void
  ) -> Bool {
    state.withLock { s in
      guard
        s.commit(
          removesShields: removesShields, connection: XCBHandle(raw: arm.conn), shields: arm.shields,
          targets: arm.targets)
      else { return false }
      submit()
      return true
    }
  }

  /// Nothing fires until the next `commit`, and what fired is forgotten: the shield
  /// connection is about to go, and its shields with it.
  func disarm() {
    state.withLock { $0.disarm() }
  }

  // MARK: The pump thread

  private func loop() {
    defer { finished.signal() }

    var fds = [
      pollfd(fd: xcb_get_file_descriptor(data.raw), events: Int16(POLLIN), revents: 0),
      pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0),
      pollfd(fd: launchWatch?.fileDescriptor ?? -1, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      guard state.withLock({ $0.running }) else { return }
      var got = false
      // Launches first: they come before their ClientStarted.
      if let w = launchWatch {
        w.retry()
        let seen = w.readLaunches()
        if !seen.isEmpty {
          state.withLock { s in fire(s.launched(seen), on: s.armedConnection) }
          got = true
        }
      }
      while true {
        var reply: UnsafeMutableRawPointer? = nil
        var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
        guard xcb_poll_for_reply(data.raw, enableSequence, &reply, &error) != 0 else { break }
        got = true
        guard let reply else {
          errors.report(error, connection: connectionName)
          state.withLock { s in fire(s.deliver([]), on: s.armedConnection) }  // the context is over
          wake()
          return
        }
        let words = reply.load(fromByteOffset: 4, as: UInt32.self)
        let bytes = [UInt8](UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4))
        free(reply)
        state.withLock { s in fire(s.deliver(bytes), on: s.armedConnection) }
      }
      if got { wake() }
      if xcb_connection_has_error(data.raw) != 0 {
        wake()  // the loop sees the broken connection
        return
      }
      _ = poll(&fds, 3, launchWatch?.lost == true ? 1000 : -1)
    }
  }

  /// Maps `shields` on the shield connection and flushes: the one state-changing request
  /// sent outside `Effects/` (the quarantine fast path; see the top of this file). Called
  /// with the state's lock held, so it is ordered with the loop's `commit`.
  private func fire(_ shields: [UInt32], on connection: XCBHandle?) {
    guard let c = connection?.raw, !shields.isEmpty else { return }
    for s in shields { xcb_map_window(c, s) }
    xcb_flush(c)
  }

  private func wake() {
    var b: UInt8 = 1
    _ = write(wakeWrite, &b, 1)
  }
}
