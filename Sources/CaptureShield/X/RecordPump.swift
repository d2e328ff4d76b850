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
// libxcb is thread-safe: the pump only reads the data connection (nobody else does while it
// runs) and only sends MapWindow on the shield connection.

internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Reads the RECORD data connection on its own thread and fires the armed shields on
/// ClientStarted (and on launches, with a `LaunchWatch`). Shared by the pump thread and the daemon's loop; every field behind `lock`.
final class RecordPump: @unchecked Sendable {
  private let lock = NSLock()
  private let data: OpaquePointer
  private let enableSequence: UInt32
  /// Resource bases whose ClientStarted does not fire (the daemon's own connections).
  private var excluded: Set<UInt32>
  /// Raw RECORD replies read and not yet taken by the loop, in order. An empty element
  /// marks the end of the context (an error reply, or libxcb saying the request is over).
  private var queue: [[UInt8]] = []
  /// ClientStarted records in `queue` (not taken yet).
  private var startsQueued = 0
  /// Launches seen by `launchWatch` and not taken yet (see `LaunchWatch`).
  private var launchesQueued: [String?] = []
  /// With `capture.quarantineOnLaunch`: processes loading libxcb fire the armed shields
  /// too, before they can connect. Used by the pump thread only.
  let launchWatch: LaunchWatch?
  /// What fires on the next ClientStarted: shield windows on `armedConn` (the shield
  /// driver's connection), and their targets.
  private var armedConn: OpaquePointer?
  private var armedShields: [UInt32] = []
  private var armedTargets: [WindowID] = []
  /// Targets whose shields were mapped by the pump and not yet reported to the loop.
  private var fired: Set<WindowID> = []
  private var running = true
  private let finished = DispatchSemaphore(value: 0)
  /// The loop polls `wakeRead`; the pump writes a byte there when it queues something.
  let wakeRead: Int32
  private let wakeWrite: Int32
  /// The pump polls `stopRead` besides the data connection.
  private let stopRead: Int32
  private let stopWrite: Int32

  /// Starts the pump thread on `data` (the RECORD data connection, whose EnableContext
  /// request was `enableSequence`).
  init(data: OpaquePointer, enableSequence: UInt32, excluded: Set<UInt32>, launchWatch: LaunchWatch? = nil) {
    self.data = data
    self.launchWatch = launchWatch
    self.enableSequence = enableSequence
    self.excluded = excluded
    var p: [Int32] = [-1, -1]
    _ = pipe(&p)
    wakeRead = p[0]
    wakeWrite = p[1]
    _ = pipe(&p)
    stopRead = p[0]
    stopWrite = p[1]
    for fd in [wakeRead, wakeWrite, stopRead, stopWrite] { _ = fcntl(fd, F_SETFL, O_NONBLOCK) }
    let t = Thread { [self] in loop() }
    t.name = "captureshield-record"
    t.start()
  }

  /// Stops the thread and waits for it. Replies it read stay available to `take`.
  func stop() {
    lock.lock()
    let was = running
    running = false
    armedConn = nil
    lock.unlock()
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
    lock.lock()
    defer { lock.unlock() }
    let out = (queue, fired, launchesQueued)
    queue = []
    fired = []
    startsQueued = 0
    launchesQueued = []
    return out
  }

  func exclude(_ base: UInt32) {
    lock.lock()
    excluded.insert(base)
    lock.unlock()
  }

  /// Under the pump's lock, unless a ClientStarted or a launch the loop has not taken is
  /// queued while shields would come down (`removesShields`; then returns false and the loop must handle
  /// the records first): runs `submit` (which queues the deferred removals on the shield
  /// connection, without flushing) and arms `arm` (shield windows on `conn`, their targets).
  /// Requests the pump sends later are queued after the removals, so a removal never
  /// undoes a shield put up for a new client. The caller flushes afterwards, outside the lock.
  func commit(
    removesShields: Bool, arm: (conn: OpaquePointer, shields: [UInt32], targets: [WindowID]), submit: () -> Void
  ) -> Bool {
    lock.lock()
    defer { lock.unlock() }
    if removesShields && (startsQueued > 0 || !launchesQueued.isEmpty) { return false }
    submit()
    armedConn = arm.conn
    armedShields = arm.shields
    armedTargets = arm.targets
    return true
  }

  /// Nothing fires until the next `commit`, and what fired is forgotten: the shield
  /// connection is about to go, and its shields with it.
  func disarm() {
    lock.lock()
    armedConn = nil
    armedShields = []
    armedTargets = []
    fired = []
    lock.unlock()
  }

  // MARK: The pump thread

  private func loop() {
    defer { finished.signal() }

    var fds = [
      pollfd(fd: xcb_get_file_descriptor(data), events: Int16(POLLIN), revents: 0),
      pollfd(fd: stopRead, events: Int16(POLLIN), revents: 0),
      pollfd(fd: launchWatch?.fileDescriptor ?? -1, events: Int16(POLLIN), revents: 0),
    ]
    while true {
      lock.lock()
      let go = running
      lock.unlock()
      guard go else { return }
      var got = false
      // Launches first: they come before their ClientStarted.
      if let w = launchWatch {
        w.retry()
        let seen = w.readLaunches()
        if !seen.isEmpty {
          launched(seen)
          got = true
        }
      }
      while true {
        var reply: UnsafeMutableRawPointer? = nil
        var error: UnsafeMutablePointer<xcb_generic_error_t>? = nil
        guard xcb_poll_for_reply(data, enableSequence, &reply, &error) != 0 else { break }
        got = true
        guard let reply else {
          free(error)
          deliver([])  // the context is over
          wake()
          return
        }
        let words = reply.load(fromByteOffset: 4, as: UInt32.self)
        let bytes = [UInt8](UnsafeRawBufferPointer(start: reply, count: 32 + Int(words) * 4))
        free(reply)
        deliver(bytes)
      }
      if got { wake() }
      if xcb_connection_has_error(data) != 0 {
        wake()  // the loop sees the broken connection
        return
      }
      _ = poll(&fds, 3, launchWatch?.lost == true ? 1000 : -1)
    }
  }

  /// Queues one reply; a ClientStarted of a client not ours fires the armed shields first.
  private func deliver(_ bytes: [UInt8]) {
    lock.lock()
    defer { lock.unlock() }
    let started = bytes.count >= 32 && bytes[1] == RecordedReply.Category.clientStarted.rawValue
    if started {
      let base = bytes.withUnsafeBytes { RecordedReply.decode($0)?.idBase ?? 0 }
      if !excluded.contains(base) {
        startsQueued += 1
        fire()
      }
    }
    queue.append(bytes)
  }

  /// X client processes started (see `LaunchWatch.readLaunches`): fires the armed shields
  /// and queues the launches.
  private func launched(_ programs: [String?]) {
    lock.lock()
    defer { lock.unlock() }
    launchesQueued += programs
    fire()
  }

  /// Maps the armed shields and flushes. Called with `lock` held.
  private func fire() {
    guard let c = armedConn, !armedShields.isEmpty else { return }
    for s in armedShields { xcb_map_window(c, s) }
    xcb_flush(c)
    fired.formUnion(armedTargets)
    // Up now: nothing to fire until the loop arms again.
    armedShields = []
    armedTargets = []
  }

  private func wake() {
    var b: UInt8 = 1
    _ = write(wakeWrite, &b, 1)
  }
}
