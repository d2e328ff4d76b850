// The copied-text guard's figures, on a private Xvfb with a real daemon:
// - exposure window: from a secure app's SetSelectionOwner to the daemon owning the
//   selection, as a third client sees the two XFixes selection events;
// - paste latency: a focused reader's full conversion (ConvertSelection → SelectionNotify
//   → GetProperty) of a guarded copy versus an unguarded one, and their ratio.
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Runs the clipboard benchmark on its own private Xvfb (640x480); figures in milliseconds,
/// plus `paste_ratio`. On failure returns `["error": 1]` and prints why.
func runClipboardBenchmark() async -> [String: Double] {
  do {
    let xvfb = try await XvfbServer.start(width: 640, height: 480)
    let result = Result { try ClipBench().run(display: xvfb.display) }
    await xvfb.stop()
    return try result.get()
  } catch {
    print("clipboard benchmark failed: \(error)")
    return ["error": 1]
  }
}

private struct ClipBenchError: Error, CustomStringConvertible {
  var description: String
}

private final class ClipBench {
  let rounds = 30
  let text = Array("correct horse battery staple 🔑".utf8)

  func now() -> Double {
    var ts = timespec()
    clock_gettime(CLOCK_MONOTONIC, &ts)
    return Double(ts.tv_sec) * 1e3 + Double(ts.tv_nsec) / 1e6
  }

  func median(_ v: [Double]) -> Double {
    let s = v.sorted()
    return s.isEmpty ? .nan : s.count % 2 == 1 ? s[s.count / 2] : (s[s.count / 2 - 1] + s[s.count / 2]) / 2
  }

  func percentile(_ v: [Double], _ p: Double) -> Double {
    let s = v.sorted()
    return s.isEmpty ? .nan : s[min(s.count - 1, Int(Double(s.count) * p))]
  }

  func shieldctlPath() -> String {
    let exe = (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? CommandLine.arguments[0]
    return URL(fileURLWithPath: exe).deletingLastPathComponent().appendingPathComponent("shieldctl").path
  }

  func connect(_ display: String) -> OpaquePointer? {
    guard let c = xcb_connect(display, nil), xcb_connection_has_error(c) == 0 else { return nil }
    return c
  }

  func atom(_ c: OpaquePointer, _ name: String) -> xcb_atom_t {
    let ck = name.withCString { xcb_intern_atom(c, 0, UInt16(strlen($0)), $0) }
    guard let r = xcb_intern_atom_reply(c, ck, nil) else { return 0 }
    defer { free(r) }
    return r.pointee.atom
  }

  func root(_ c: OpaquePointer) -> xcb_window_t { xcb_setup_roots_iterator(xcb_get_setup(c)).data.pointee.root }

  func window(_ c: OpaquePointer, secure: Bool, eventMask: UInt32 = 0) -> xcb_window_t {
    let w = xcb_generate_id(c)
    let values: [UInt32] = [1, eventMask]
    xcb_create_window(
      c, 0, w, root(c), 0, 0, 20, 20, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0,
      XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue, values)
    if secure {
      var one: UInt32 = 1
      xcb_change_property(
        c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), w, atom(c, "_CAPTURE_SHIELD_SECURE"), 6, 32, 1, &one)
    }
    xcb_map_window(c, w)
    return w
  }

  func sync(_ c: OpaquePointer) {
    if let r = xcb_get_input_focus_reply(c, xcb_get_input_focus(c), nil) { free(r) }
  }

  /// A source app: answers TARGETS and UTF8_STRING requests pending on `c`.
  func serveSource(_ c: OpaquePointer) {
    let targets = atom(c, "TARGETS")
    let utf8 = atom(c, "UTF8_STRING")
    while let ev = xcb_poll_for_event(c) {
      defer { free(ev) }
      guard ev.pointee.response_type & 0x7f == UInt8(XCB_SELECTION_REQUEST) else { continue }
      let e = UnsafeRawPointer(ev).load(as: xcb_selection_request_event_t.self)
      let prop = e.property == 0 ? e.target : e.property
      var reply = xcb_selection_notify_event_t()
      reply.response_type = UInt8(XCB_SELECTION_NOTIFY)
      (reply.time, reply.requestor, reply.selection, reply.target) = (e.time, e.requestor, e.selection, e.target)
      if e.target == targets {
        var list: [UInt32] = [targets, utf8]
        xcb_change_property(c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), e.requestor, prop, 4, 32, 2, &list)
        reply.property = prop
      } else if e.target == utf8 {
        xcb_change_property(
          c, UInt8(XCB_PROP_MODE_REPLACE.rawValue), e.requestor, prop, utf8, 8, UInt32(text.count), text)
        reply.property = prop
      }
      var buf = [CChar](repeating: 0, count: 32)
      withUnsafeBytes(of: &reply) { raw in for i in 0..<min(32, raw.count) { buf[i] = CChar(bitPattern: raw[i]) } }
      xcb_send_event(c, 0, e.requestor, 0, buf)
      xcb_flush(c)
    }
  }

  /// Waits (serving `sources` meanwhile) until `match` accepts an event of `c`.
  func pump(
    _ c: OpaquePointer, sources: [OpaquePointer], timeoutMs: Double = 3000,
    _ match: (UnsafeMutablePointer<xcb_generic_event_t>) -> Bool
  ) throws {
    let deadline = now() + timeoutMs
    while now() < deadline {
      for s in sources { serveSource(s) }
      while let ev = xcb_poll_for_event(c) {
        defer { free(ev) }
        if match(ev) { return }
      }
      var fds = ([c] + sources).map { pollfd(fd: xcb_get_file_descriptor($0), events: Int16(POLLIN), revents: 0) }
      _ = poll(&fds, nfds_t(fds.count), 5)
    }
    throw ClipBenchError(description: "timed out waiting for an X event")
  }

  func run(display: String) throws -> [String: Double] {
    let dir = NSTemporaryDirectory() + "shieldbench-clip-\(getpid())"
    try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
    defer { try? FileManager.default.removeItem(atPath: dir) }
    guard let obs = connect(display) else { throw ClipBenchError(description: "cannot connect to \(display)") }
    defer { xcb_disconnect(obs) }

    let policy = dir + "/policy.json5"
    try "{version: 1}".write(toFile: policy, atomically: true, encoding: .utf8)
    var environment = ProcessInfo.processInfo.environment
    environment["DISPLAY"] = display
    environment["XDG_STATE_HOME"] = dir + "/state"  // the learned history: this run's own
    let daemon = try ChildProcess(
      shieldctlPath(), ["watch", "--display", display, "--policy", policy], environment: environment)
    // SIGTERM, then SIGKILL after 3 s (a child can inherit a blocked SIGTERM).
    defer { daemon.terminateBlocking(grace: .seconds(3)) }
    let manager = atom(obs, "_CAPTURE_SHIELD_S0")
    let stateAtom = atom(obs, "_CAPTURE_SHIELD_STATE")
    let clipboard = atom(obs, "CLIPBOARD")

    guard let secureApp = connect(display), let plainApp = connect(display), let reader = connect(display) else {
      throw ClipBenchError(description: "cannot connect")
    }
    defer { [secureApp, plainApp, reader].forEach { xcb_disconnect($0) } }
    let secureWindow = window(secureApp, secure: true)
    let plainWindow = window(plainApp, secure: false)
    let readerWindow = window(reader, secure: false, eventMask: XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue)
    xcb_set_input_focus(reader, UInt8(XCB_INPUT_FOCUS_POINTER_ROOT.rawValue), readerWindow, 0)
    [secureApp, plainApp, reader].forEach { sync($0) }

    // The daemon runs and has seen the secure window.
    let deadline = now() + 10_000
    while true {
      if now() > deadline { throw ClipBenchError(description: "the daemon did not see the secure window") }
      if let r = xcb_get_selection_owner_reply(obs, xcb_get_selection_owner(obs, manager), nil) {
        let owner = r.pointee.owner
        free(r)
        if owner != 0,
          let p = xcb_get_property_reply(obs, xcb_get_property(obs, 0, root(obs), stateAtom, 0, 0, 1 << 22), nil)
        {
          let data = Data(bytes: xcb_get_property_value(p), count: Int(xcb_get_property_value_length(p)))
          free(p)
          if let s = try? JSONDecoder().decode(DaemonState.self, from: data),
            s.windows.contains(where: { $0.id == secureWindow && $0.secure })
          {
            break
          }
        }
      }
      usleep(20_000)
    }

    let xfixes: UInt8 = {
      let ck = "XFIXES".withCString { xcb_query_extension(obs, UInt16(strlen($0)), $0) }
      guard let r = xcb_query_extension_reply(obs, ck, nil) else { return 0 }
      defer { free(r) }
      return r.pointee.first_event
    }()
    if let r = xcb_xfixes_query_version_reply(obs, xcb_xfixes_query_version(obs, 5, 0), nil) { free(r) }
    let obsWindow = window(obs, secure: false)
    xcb_xfixes_select_selection_input(
      obs, obsWindow, clipboard, XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER.rawValue)
    sync(obs)
    let secureBase = secureWindow & ~xcb_get_setup(secureApp).pointee.resource_id_mask
    let utf8 = atom(reader, "UTF8_STRING")
    let prop = atom(reader, "SHIELDBENCH_PASTE")

    func paste(sources: [OpaquePointer]) throws -> Double {
      let t0 = now()
      xcb_convert_selection(reader, readerWindow, clipboard, utf8, prop, 0)
      xcb_flush(reader)
      var got: xcb_atom_t = 0
      try pump(reader, sources: sources) { ev in
        guard ev.pointee.response_type & 0x7f == UInt8(XCB_SELECTION_NOTIFY) else { return false }
        got = UnsafeRawPointer(ev).load(as: xcb_selection_notify_event_t.self).property
        return true
      }
      guard got != 0,
        let r = xcb_get_property_reply(reader, xcb_get_property(reader, 1, readerWindow, prop, 0, 0, 1024), nil)
      else { throw ClipBenchError(description: "paste refused") }
      let n = Int(xcb_get_property_value_length(r))
      free(r)
      guard n == text.count else { throw ClipBenchError(description: "paste got \(n) bytes") }
      return now() - t0
    }

    var exposure: [Double] = []
    var guarded: [Double] = []
    var unguarded: [Double] = []
    for _ in 0..<rounds {
      // Secure copy: time from the app's ownership to the daemon's, as the observer sees it.
      xcb_set_selection_owner(secureApp, secureWindow, clipboard, 0)
      xcb_flush(secureApp)
      var appSeen: Double? = nil
      var daemonSeen: Double? = nil
      try pump(obs, sources: [secureApp]) { ev in
        guard ev.pointee.response_type & 0x7f == xfixes &+ UInt8(XCB_XFIXES_SELECTION_NOTIFY) else { return false }
        let e = UnsafeRawPointer(ev).load(as: xcb_xfixes_selection_notify_event_t.self)
        let base = e.owner & ~xcb_get_setup(obs).pointee.resource_id_mask
        if e.owner == secureWindow || base == secureBase {
          appSeen = now()
          return false
        }
        guard appSeen != nil, e.owner != 0 else { return false }
        daemonSeen = now()
        return true
      }
      exposure.append(daemonSeen! - appSeen!)
      guarded.append(try paste(sources: [secureApp]))
      // Unguarded copy from a plain window.
      xcb_set_selection_owner(plainApp, plainWindow, clipboard, 0)
      sync(plainApp)
      unguarded.append(try paste(sources: [plainApp]))
    }
    let out: [String: Double] = [
      "exposure_ms_median": median(exposure),
      "exposure_ms_p95": percentile(exposure, 0.95),
      "exposure_ms_max": exposure.max() ?? .nan,
      "paste_guarded_ms_median": median(guarded),
      "paste_unguarded_ms_median": median(unguarded),
      "paste_ratio": median(guarded) / median(unguarded),
      "rounds": Double(rounds),
    ]
    FileHandle.standardError.write(Data("clipboard: \(out.sorted { $0.key < $1.key })\n".utf8))
    return out
  }
}
