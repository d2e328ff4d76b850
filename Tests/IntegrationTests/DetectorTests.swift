// CaptureDetector against a real Xvfb and real capture tools: each tool's client must be seen
// starting, making its capture requests on the root, and dying.

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport
import Synchronization
import Testing

/// One capture tool run under the detector.
struct DetectorTool: Sendable, CustomStringConvertible {
  let name: String
  let executable: String
  /// Arguments; "{DIR}" is replaced by a scratch directory, "{DISPLAY}" by ":N".
  let arguments: [String]
  /// Each inner list: at least one of these kinds must be reported targeting the root.
  let onRoot: [[String]]
  /// Kinds without a target that must be reported.
  let untargeted: [String]
  var description: String { name }

  func resolvedArguments(directory: String, display: String) -> [String] {
    arguments.map {
      $0.replacingOccurrences(of: "{DIR}", with: directory).replacingOccurrences(of: "{DISPLAY}", with: display)
    }
  }

  static let all: [DetectorTool] = [
    DetectorTool(
      name: "xwd", executable: "xwd", arguments: ["-root", "-silent", "-out", "{DIR}/root.xwd"],
      onRoot: [["GetImage"]], untargeted: []),
    DetectorTool(
      name: "import", executable: "import", arguments: ["-window", "root", "png:{DIR}/root.png"],
      onRoot: [["GetImage"]], untargeted: ["GrabServer"]),
    DetectorTool(
      name: "ffmpeg", executable: "ffmpeg",
      arguments: [
        "-nostdin", "-hide_banner", "-loglevel", "error", "-f", "x11grab", "-video_size", "320x240", "-i",
        "{DISPLAY}.0+0,0", "-frames:v", "5", "-y", "{DIR}/frame_%02d.ppm",
      ],
      onRoot: [["MIT-SHM ShmGetImage"]], untargeted: []),
    DetectorTool(
      name: "scrot", executable: "scrot", arguments: ["--overwrite", "{DIR}/screen.png"],
      onRoot: [["MIT-SHM ShmGetImage"]], untargeted: []),
    DetectorTool(
      name: "maim", executable: "maim", arguments: ["{DIR}/screen.png"],
      onRoot: [["RENDER CreatePicture", "Composite RedirectSubwindows(Automatic)"]], untargeted: []),
  ]
}

/// An event as the test loop saw it.
struct SeenEvent {
  let event: DetectorEvent
  let serverTime: UInt32
  /// When `drain` returned it.
  let drained: ContinuousClock.Instant
  /// CLOCK_MONOTONIC in ms (the X server's clock) when drained.
  let drainedMonotonicMs: UInt32
}

func monotonicMilliseconds() -> UInt32 {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return UInt32(truncatingIfNeeded: Int(ts.tv_sec) * 1000 + Int(ts.tv_nsec) / 1_000_000)
}

/// Drains `detector` with a poke every 20 ms until `done` says so or `timeout` passes.
func collect(
  _ detector: CaptureDetector, timeout: Duration, isSecure: (UInt32) -> Bool = { _ in false },
  until done: ([SeenEvent]) -> Bool
) async -> [SeenEvent] {
  var seen: [SeenEvent] = []
  var lastPoke = ContinuousClock.now - .seconds(1)
  let deadline = ContinuousClock.now + timeout
  while ContinuousClock.now < deadline {
    let now = ContinuousClock.now
    if now - lastPoke >= .milliseconds(20) {
      detector.poke()
      lastPoke = now
    }
    repeat {
      for (event, time) in detector.drainWithServerTime(isSecure: isSecure) {
        seen.append(
          SeenEvent(
            event: event, serverTime: time, drained: ContinuousClock.now, drainedMonotonicMs: monotonicMilliseconds()))
      }
    } while detector.moreAvailable
    if done(seen) || detector.hasError { break }
    try? await Task.sleep(for: .milliseconds(1))
  }
  return seen
}

func milliseconds(_ d: Duration) -> Double {
  Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
}

@Suite("RECORD capture detector", .serialized, .timeLimit(.minutes(5)))
struct DetectorTests {
  @Test("each capture tool is seen starting, capturing the root, and dying", arguments: DetectorTool.all)
  func toolIsDetected(_ tool: DetectorTool) async throws {
    let server = try await XvfbServer.start()
    let root = try server.connect().root
    let detector = try CaptureDetector(display: server.display)
    let directory = try makeTemporaryDirectory(prefix: "captureshield-detector")
    defer { removeTree(directory) }

    let launched = ContinuousClock.now
    let process = try server.startBackground(
      tool.executable, tool.resolvedArguments(directory: directory, display: server.display))
    var exitedAt: ContinuousClock.Instant?
    let seen = await collect(detector, timeout: .seconds(60)) { seen in
      if exitedAt == nil, !process.isRunning { exitedAt = ContinuousClock.now }
      guard let exitedAt else { return false }
      var started: Set<ClientID> = []
      var died: Set<ClientID> = []
      for s in seen {
        if case .clientStarted(let c) = s.event { started.insert(c) }
        if case .clientDied(let c) = s.event { died.insert(c) }
      }
      return (!started.isEmpty && started.isSubset(of: died)) || ContinuousClock.now - exitedAt > .seconds(10)
    }
    let result = await process.stop()
    #expect(result.status == .exited(0), "\(tool): \(result)")
    #expect(!detector.hasError)

    // Every client in this private server after the detector started is the tool's.
    var started: [ClientID] = []
    var died: Set<ClientID> = []
    var requests: [(ClientID, CaptureRequest, SeenEvent)] = []
    for s in seen {
      switch s.event {
      case .clientStarted(let c): started.append(c)
      case .clientDied(let c): died.insert(c)
      case .request(let c, let r): requests.append((c, r, s))
      case .ownRead: break  // (not handed out: `watchesOwnWindows` is off here)
      }
    }
    #expect(!started.isEmpty, "\(tool): no ClientStarted seen")
    #expect(Set(started).isSubset(of: died), "\(tool): started \(started), died \(died)")
    for (client, _, _) in requests {
      #expect(started.contains(client), "\(tool): request from a client never seen starting: \(client)")
    }
    let rootKinds = Set(requests.filter { $0.1.target == root }.map(\.1.kind))
    let untargetedKinds = Set(requests.filter { $0.1.target == nil }.map(\.1.kind))
    for alternatives in tool.onRoot {
      #expect(
        !rootKinds.isDisjoint(with: alternatives),
        "\(tool): none of \(alternatives) on the root; saw \(requests.map { "\($0.1.kind)@\($0.1.target.map { String($0, radix: 16) } ?? "-")" })"
      )
    }
    for kind in tool.untargeted {
      #expect(untargetedKinds.contains(kind), "\(tool): no \(kind); saw \(untargetedKinds)")
    }
    #expect(requests.allSatisfy { !$0.1.bypassesShield })

    // Timings (printed, not asserted).
    var counts: [String: Int] = [:]
    for (_, r, _) in requests {
      counts[r.kind + (r.target == root ? "@root" : r.target == nil ? "" : "@other"), default: 0] += 1
    }
    var lines = [
      "[detector] \(tool): \(started.count) client(s), \(requests.count) capture records \(counts.sorted { $0.key < $1.key })"
    ]
    for client in started {
      guard let start = seen.first(where: { $0.event == .clientStarted(client) }) else { continue }
      guard
        let first = requests.first(where: { $0.0 == client && CaptureCatalog.standard.startsSession($0.1) })
      else {
        lines.append("  client \(client): no capture records")
        continue
      }
      let serverDelta = Int64(first.2.serverTime) - Int64(start.serverTime)
      let latency = Int64(first.2.drainedMonotonicMs) - Int64(first.2.serverTime)
      lines.append(
        "  client \(client): ClientStarted -> first session-starting record (\(first.1.kind)): server clock \(serverDelta) ms, "
          + String(format: "as drained %.1f ms; ", milliseconds(first.2.drained - start.drained))
          + String(format: "launch -> first capture drained %.1f ms; ", milliseconds(first.2.drained - launched))
          + "server recorded -> drained \(latency) ms")
    }
    print(lines.joined(separator: "\n"))
    await server.stop()
  }

  @Test("manual redirection of a secure window bypasses the shield; own windows are not reported")
  func manualRedirect() async throws {
    let server = try await XvfbServer.start()
    let detector = try CaptureDetector(display: server.display)
    let victim = try server.connect()
    let attacker = try server.connect()
    func makeWindow(_ x: TestXConnection) throws -> UInt32 {
      let w = x.generateID()
      xcb_create_window(
        x.raw, 0, w, x.root, 10, 10, 50, 50, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, 0, nil)
      xcb_map_window(x.raw, w)
      try x.sync()
      return w
    }
    let secure = try makeWindow(victim)
    let plain = try makeWindow(victim)
    let own = try makeWindow(attacker)
    if let r = xcb_composite_query_version_reply(attacker.raw, xcb_composite_query_version(attacker.raw, 0, 4), nil) {
      free(r)
    }
    let manual = UInt8(XCB_COMPOSITE_REDIRECT_MANUAL.rawValue)
    let automatic = UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue)
    xcb_composite_redirect_subwindows(attacker.raw, own, manual)  // own: not reported
    xcb_composite_redirect_subwindows(attacker.raw, secure, manual)
    xcb_composite_redirect_window(attacker.raw, plain, automatic)
    // A plain GetImage on an own window: not reported either.
    if let r = xcb_get_image_reply(
      attacker.raw, xcb_get_image(attacker.raw, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), own, 0, 0, 1, 1, ~0), nil)
    {
      free(r)
    }
    attacker.flush()
    _ = try? attacker.sync()
    let attackerID = ClientID(own & ~detector.resourceMask)

    let isSecure: (UInt32) -> Bool = { $0 == secure }
    let seen = await collect(detector, timeout: .seconds(10), isSecure: isSecure) { seen in
      seen.filter { if case .request = $0.event { return true } else { return false } }.count >= 2
    }
    // The positive marker: a GetImage of the victim's plain window, sent after everything
    // above; once it is reported, any later report of the requests above would have come.
    if let r = xcb_get_image_reply(
      attacker.raw, xcb_get_image(attacker.raw, UInt8(XCB_IMAGE_FORMAT_Z_PIXMAP.rawValue), plain, 0, 0, 1, 1, ~0), nil)
    {
      free(r)
    }
    let isMarker = { (r: CaptureRequest) in r.kind == "GetImage" && r.target == plain }
    let late = await collect(detector, timeout: .seconds(10), isSecure: isSecure) { late in
      late.contains { if case .request(_, let r) = $0.event { return isMarker(r) } else { return false } }
    }
    let requests = (seen + late).compactMap { s -> (ClientID, CaptureRequest)? in
      if case .request(let c, let r) = s.event, !isMarker(r) { return (c, r) } else { return nil }
    }
    #expect(
      late.contains { if case .request(_, let r) = $0.event { return isMarker(r) } else { return false } },
      "the marker GetImage was not reported")
    #expect(
      requests.map(\.1) == [
        CaptureRequest(kind: "Composite RedirectSubwindows(Manual)", target: secure, bypassesShield: true),
        CaptureRequest(kind: "Composite RedirectWindow(Automatic)", target: plain, bypassesShield: false),
      ])
    #expect(requests.allSatisfy { $0.0 == attackerID }, "\(requests)")
    let catalog = CaptureCatalog.standard
    #expect(catalog.startsSession(requests.first!.1))
    #expect(!catalog.startsSession(CaptureRequest(kind: "Composite RedirectWindow(Automatic)", target: plain)))
    await server.stop()
  }

  /// A client floods CopyArea from the root into its own pixmap (each followed by a CopyArea
  /// between its own drawables). Every reported request must be a foreign one, and the
  /// per-drain limit must apply. Xvfb 21.1.7 itself drops a few records when every request
  /// of a burst is recorded back to back (0.05-1%, also seen with an independent raw-socket
  /// RECORD reader in C, so not libxcb or the detector); sparse recorded requests amid heavy
  /// traffic were never lost. So this requires 95%, not 100%.
  @Test(
    "a burst of foreign and own CopyArea requests: only the foreign ones, almost none lost",
    arguments: [2000, 20000])
  func burst(count: Int) async throws {
    let server = try await XvfbServer.start()
    let detector = try CaptureDetector(display: server.display)
    detector.maxRepliesPerDrain = 16
    let x = try server.connect()
    let pixmap = x.generateID()
    xcb_create_pixmap(x.raw, x.rootDepth, pixmap, x.root, 4, 4)
    let gc = x.generateID()
    xcb_create_gc(x.raw, gc, pixmap, 0, nil)
    for _ in 0..<count {
      xcb_copy_area(x.raw, x.root, pixmap, gc, 0, 0, 0, 0, 4, 4)
      xcb_copy_area(x.raw, pixmap, pixmap, gc, 0, 0, 1, 1, 2, 2)
    }
    try x.sync()
    x.disconnect()
    var sawMore = false
    var total = 0
    var others: [CaptureRequest] = []
    var died = false
    let deadline = ContinuousClock.now + .seconds(30)
    var lastPoke = ContinuousClock.now - .seconds(1)
    // Until ClientDied, which comes after all of the client's requests, or, since the
    // server's record loss can take ClientDied too, until 2 s pass with nothing new.
    var lastNews = ContinuousClock.now
    var seen = 0
    while !died, ContinuousClock.now < deadline, ContinuousClock.now - lastNews < .seconds(2) {
      if ContinuousClock.now - lastPoke >= .milliseconds(20) {
        detector.poke()
        lastPoke = ContinuousClock.now
      }
      for event in detector.drain(isSecure: { _ in false }) {
        switch event {
        case .request(_, let r) where r == CaptureRequest(kind: "CopyArea", target: x.root): total += 1
        case .request(_, let r): others.append(r)
        case .clientDied: died = true  // after all of its requests
        case .clientStarted, .ownRead: break
        }
      }
      sawMore = sawMore || detector.moreAvailable
      if detector.repliesRead != seen {
        seen = detector.repliesRead
        lastNews = ContinuousClock.now
      }
      if !detector.moreAvailable { try await Task.sleep(for: .milliseconds(1)) }
    }
    if !died { print("[detector] burst of \(count) pairs: the server lost the ClientDied record too") }
    #expect(total >= count * 95 / 100)
    #expect(others.isEmpty, "\(others.prefix(5))")
    #expect(sawMore, "the per-drain limit never applied")
    #expect(detector.malformedReplies == 0)
    #expect(!detector.hasError)
    print(
      "[detector] burst of \(count) pairs: \(total) foreign CopyArea reported (\(count - total) lost by the server), "
        + "\(detector.requestsRecorded) requests in \(detector.repliesRead) RECORD replies")
    await server.stop()
  }

  /// NameWindowPixmap names a pixmap holding another client's window (the naming is the
  /// capture); a GetImage of that pixmap reads a pixmap, not an own window. The detector
  /// hands the read out as an own read whose pixmap is known as a pixmap from the recorded
  /// NameWindowPixmap, so the verdict needs no lookup (which, after a FreePixmap, answered
  /// "gone" and counted the read again as "GetImage(own window)"). Control: a GetImage of an
  /// own window, known as a window from its recorded CreateWindow.
  @Test("the pixmap NameWindowPixmap names is known as a pixmap; an own window as a window")
  func namedPixmap() async throws {
    let server = try await XvfbServer.start()
    let detector = try CaptureDetector(display: server.display)
    detector.watchesOwnWindows = true
    let victim = try server.connect()
    let window = victim.generateID()
    xcb_create_window(
      victim.raw, 0, window, victim.root, 10, 10, 50, 50, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, 0, nil)
    xcb_map_window(victim.raw, window)
    try victim.sync()
    let attacker = try server.connect()  // after the detector started: its every request is seen
    if let r = xcb_composite_query_version_reply(attacker.raw, xcb_composite_query_version(attacker.raw, 0, 4), nil) {
      free(r)
    }
    xcb_composite_redirect_window(attacker.raw, window, UInt8(XCB_COMPOSITE_REDIRECT_AUTOMATIC.rawValue))
    let pixmap = attacker.generateID()
    try attacker.check(xcb_composite_name_window_pixmap_checked(attacker.raw, window, pixmap), "NameWindowPixmap")
    let own = attacker.generateID()
    xcb_create_window(
      attacker.raw, 0, own, attacker.root, 10, 10, 50, 50, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0, 0,
      nil)
    xcb_map_window(attacker.raw, own)
    _ = try attacker.getImage(of: pixmap)
    _ = try attacker.getImage(of: own)
    try attacker.check(xcb_free_pixmap_checked(attacker.raw, pixmap), "FreePixmap")
    attacker.disconnect()
    let attackerID = ClientID(own & ~detector.resourceMask)
    let seen = await collect(detector, timeout: .seconds(10)) { seen in
      seen.contains { if case .clientDied(attackerID) = $0.event { return true } else { return false } }
    }
    var requests: [String] = []
    var ownReads: [UInt32: DrawableFact?] = [:]
    for s in seen {
      switch s.event {
      case .request(attackerID, let r): requests.append(r.kind)
      case .ownRead(attackerID, let read, let known): ownReads[read.source] = known[read.source]
      default: break
      }
    }
    print("[detector] named pixmap: requests \(requests); own reads \(ownReads)")
    #expect(requests.contains("Composite NameWindowPixmap"))
    #expect(ownReads[pixmap] == .some(.pixmap), "the named pixmap: \(String(describing: ownReads[pixmap]))")
    #expect(ownReads[own] == .some(.window(nil)), "the own window: \(String(describing: ownReads[own]))")
    #expect(!detector.hasError)
    await server.stop()
  }

  @Test("a server without RECORD: init fails clearly")
  func missingRecord() async throws {
    let server = try await XvfbServer.start(extraArguments: ["-extension", "RECORD"])
    #expect(throws: XError.missingExtension("RECORD")) { _ = try CaptureDetector(display: server.display) }
    await server.stop()
  }
}
