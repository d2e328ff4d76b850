internal import CXCB
import Foundation

/// The CLI's side of the protocol: reads the daemon's state, sets tags, sends commands.
/// Every request here is one the user asked for explicitly.
public struct XControl: ~Copyable {
  let x: XConnection
  /// The environment the daemon's command socket is found by (`XDG_RUNTIME_DIR`).
  let environment: [String: String]

  /// Connects to `display` (nil: `$DISPLAY`); the daemon's command socket is looked for
  /// where a daemon with `environment` puts it (this process's by default).
  public init(display: String?, environment: [String: String] = ProcessInfo.processInfo.environment)
    throws(XError)
  {
    x = try XConnection(display: display)
    self.environment = environment
  }

  /// The display this control talks to.
  public var displayName: String { x.displayName }

  var managerOwner: xcb_window_t {
    x.selectionOwner(x.atom(ProtocolAtom.managerPrefix + String(x.screenNumber)))
  }

  /// The running daemon's published state, or nil when no daemon owns the display.
  public func readState() throws(XError) -> DaemonState? {
    guard managerOwner != 0 else { return nil }
    guard let v = x.property(x.root, x.atom(ProtocolAtom.state), maxBytes: 64 << 20), !v.bytes.isEmpty else {
      throw .failed("the daemon runs but has not published its state yet; try again")
    }
    do {
      return try JSONDecoder().decode(DaemonState.self, from: Data(v.bytes))
    } catch {
      throw .failed("cannot read the daemon's state (\(error)); is the daemon the same version as this shieldctl?")
    }
  }

  /// Whether the manager selection's owner really is the daemon that published `state`:
  /// its X client's PID (from the X server, X-Resource) is `state.pid` and that process
  /// runs a program named `shieldctl`. nil when it is; else what is wrong. Whether it
  /// still reacts is `unresponsiveDaemon`.
  public func daemonProblem(_ state: DaemonState) -> String? {
    let owner = managerOwner
    guard owner != 0 else { return "no client owns the manager selection" }
    guard let pid = x.clientPID(of: owner) else {
      return "the manager selection's owner (window 0x\(String(owner, radix: 16))) has no PID the X server knows"
    }
    let id = ProcessInfoReader.identity(pid: pid)
    let exe = id.exe ?? "?"
    guard pid == state.pid, (exe as NSString).lastPathComponent == "shieldctl" else {
      return
        "the manager selection is held by pid \(pid) (\(exe)), not by the daemon that published the state (pid \(state.pid)): another client took it"
    }
    return nil
  }

  /// Why the daemon that published `state` (and owns the manager selection) does not
  /// react, or nil when its loop answers a ping within `timeout`: a stopped process
  /// (SIGSTOP, a debugger) is named as such at once; otherwise a loop that is stuck (or a
  /// machine so loaded that it cannot answer in `timeout`) misses the ping.
  public func unresponsiveDaemon(_ state: DaemonState, timeout: Duration = .seconds(2)) -> String? {
    let pid = state.pid
    if ProcessInfoReader.isStopped(pid: pid) {
      return "the daemon (pid \(pid)) is stopped (SIGSTOP?): it does not react to anything"
    }
    let nonce = UInt32.random(in: 1...UInt32.max)
    switch CommandClient.request(.ping(nonce: nonce), path: commandSocketPath, timeout: timeout) {
    case .reply(.ok), .reply(.titles): return nil
    case .reply(.refused(let why)): return "the daemon (pid \(pid)) refused this shieldctl's ping: \(why)"
    case .noSocket: return "the daemon (pid \(pid)) has no command socket at \(commandSocketPath): it cannot be pinged"
    case .failed(let why): return "cannot ping the daemon (pid \(pid)): \(why)"
    case .timedOut:
      return
        "the daemon (pid \(pid)) did not answer a ping within \(timeout): its loop is stuck (or frozen); it does not react to new windows or captures"
    }
  }

  /// Whether the daemon's loop answers a ping within `timeout`: a `ping` command with a
  /// random nonce over the command socket; the loop writes the nonce to
  /// `_CAPTURE_SHIELD_PONG` on the manager window and replies. A stopped daemon, or one
  /// whose loop is stuck, never replies (the kernel queues the connection meanwhile).
  public func pingDaemon(timeout: Duration = .seconds(2)) -> Bool {
    guard managerOwner != 0 else { return false }
    let nonce = UInt32.random(in: 1...UInt32.max)
    if case .reply(.ok) = CommandClient.request(.ping(nonce: nonce), path: commandSocketPath, timeout: timeout) {
      return true
    }
    return false
  }

  /// The daemon's command socket for this display (`CommandChannel`).
  public var commandSocketPath: String {
    daemonCommandSocketPath(display: x.displayName, screen: x.screenNumber, environment: environment)
  }

  /// Sets (`secure: true`) or removes the `_CAPTURE_SHIELD_SECURE` tag. While a daemon
  /// runs, either is a command (`tag`, `untag`): the daemon changes the tag itself, since it
  /// puts back a tag that another client than the window's removes (docs/security.md,
  /// "Tags"), and under the Xorg module only the window's owner and trusted programs (the
  /// daemon, not this command) may change it. Without a daemon this command changes it as
  /// an ordinary client: the module refuses it for another client's window.
  public func setTag(_ window: WindowID, secure: Bool) throws(XError) {
    guard x.attributes(window) != nil else { throw .noSuchWindow(window) }
    if managerOwner != 0 {
      try send(secure ? .tag(window) : .untag(window))
      return
    }
    let atom = x.atom(ProtocolAtom.secure)
    let ck: xcb_void_cookie_t
    if secure {
      var one: UInt32 = 1
      ck = xcb_change_property_checked(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), window, atom, 6, 32, 1, &one)
    } else {
      ck = xcb_delete_property_checked(x.conn, window, atom)
    }
    if let err = xcb_request_check(x.conn, ck) {
      let code = err.pointee.error_code
      free(err)
      if code == 3 { throw .noSuchWindow(window) }
      if code == 10 {  // BadAccess: the Xorg module protects the tag
        throw .failed(
          "the X server refused to \(secure ? "set" : "remove") the tag of 0x\(String(window, radix: 16)) (BadAccess): the CaptureShield Xorg module lets only the window's own program and the daemon change it, and no daemon runs on display '\(x.displayName)' (start it: shieldctl watch)"
        )
      }
      throw .failed("the X server refused to change the tag (error \(code))")
    }
  }

  /// The client window for `window`: itself when it carries WM_STATE, else the first
  /// descendant that does (a window manager's frame → the app's window).
  public func clientWindow(for window: WindowID) throws(XError) -> WindowID {
    guard x.attributes(window) != nil else { throw .noSuchWindow(window) }
    let wmState = x.atom("WM_STATE")
    var queue: [WindowID] = [window]
    var seen = 0
    while !queue.isEmpty && seen < 4096 {
      let w = queue.removeFirst()
      seen += 1
      if let v = x.property(w, wmState, maxBytes: 8), !v.bytes.isEmpty { return w }
      if let t = x.queryTree(w) { queue += t.children.reversed() }
    }
    return window
  }

  /// Lets the user click a window (like `xprop`/`xwininfo`) and returns its client window.
  public func pickWindow() throws(XError) -> WindowID {
    let cursorFont = x.generateID()
    "cursor".withCString { _ = xcb_open_font(x.conn, cursorFont, 6, $0) }
    let cursor = x.generateID()
    xcb_create_glyph_cursor(x.conn, cursor, cursorFont, cursorFont, 34, 35, 0, 0, 0, 0xffff, 0xffff, 0xffff)
    let mask = UInt16(XCB_EVENT_MASK_BUTTON_PRESS.rawValue | XCB_EVENT_MASK_BUTTON_RELEASE.rawValue)
    guard
      let g = xcb_grab_pointer_reply(
        x.conn,
        xcb_grab_pointer(
          x.conn, 0, x.root, mask, UInt8(XCB_GRAB_MODE_SYNC.rawValue), UInt8(XCB_GRAB_MODE_ASYNC.rawValue), x.root,
          cursor, 0), nil)
    else { throw .failed("cannot grab the pointer") }
    let status = g.pointee.status
    free(g)
    guard status == UInt8(XCB_GRAB_STATUS_SUCCESS.rawValue) else {
      throw .failed("cannot grab the pointer (another program holds it)")
    }
    FileHandle.standardError.write(Data("Click the window to select (any button)...\n".utf8))
    var picked: WindowID = 0
    while picked == 0 {
      xcb_allow_events(x.conn, UInt8(XCB_ALLOW_SYNC_POINTER.rawValue), 0)
      x.flush()
      guard let ev = xcb_wait_for_event(x.conn) else { throw .failed("lost the X connection") }
      if Int32(CXCB_event_type(ev)) == XCB_BUTTON_PRESS {
        let e = UnsafeRawPointer(ev).load(as: xcb_button_press_event_t.self)
        picked = e.child != 0 ? e.child : e.root
      }
      free(ev)
    }
    xcb_ungrab_pointer(x.conn, 0)
    x.flush()
    return try clientWindow(for: picked)
  }

  /// Sends a command to the running daemon over its command socket and waits for its reply
  /// (`timeout`). Commands no longer travel as ClientMessages: any X client can forge those.
  public func send(_ command: DaemonCommand, timeout: Duration = .seconds(5)) throws(XError) {
    _ = try request(command, timeout: timeout)
  }

  /// The secure windows' titles, from the daemon over its command socket (the published
  /// state has none). Nil when no daemon runs or it does not answer: the caller shows none.
  public func secureWindowTitles(timeout: Duration = .seconds(2)) -> [WindowID: String]? {
    guard managerOwner != 0, case .titles(let t)? = try? request(.titles, timeout: timeout) else { return nil }
    return t
  }

  /// One command to the daemon and its reply (`refused` is thrown).
  func request(_ command: DaemonCommand, timeout: Duration) throws(XError) -> CommandChannel.Reply {
    guard managerOwner != 0 else { throw .noDaemon(display: x.displayName) }
    if case .shield(let w) = command, x.attributes(w) == nil { throw .noSuchWindow(w) }
    if case .unshield(let w) = command, x.attributes(w) == nil { throw .noSuchWindow(w) }
    if case .untag(let w) = command, x.attributes(w) == nil { throw .noSuchWindow(w) }
    if case .tag(let w) = command, x.attributes(w) == nil { throw .noSuchWindow(w) }
    let path = commandSocketPath
    switch CommandClient.request(command, path: path, timeout: timeout) {
    case .reply(.ok): return .ok
    case .reply(.titles(let t)): return .titles(t)
    case .reply(.refused(let why)): throw .failed("the daemon refused the command: \(why)")
    case .noSocket(let why):
      throw .failed(
        "a daemon owns display '\(x.displayName)' but there is no command socket at \(path) (\(why)): it runs with another XDG_RUNTIME_DIR or user, or is an older version; commands reach it only through that socket"
      )
    case .timedOut:
      throw .failed("the daemon did not answer within \(timeout) (stopped or stuck? see 'shieldctl status')")
    case .failed(let why): throw .failed(why)
    }
  }

  /// The facts of a live window (for `policy explain --window`).
  public func windowFacts(_ window: WindowID) throws(XError) -> WindowInfo {
    guard x.attributes(window) != nil else { throw .noSuchWindow(window) }
    var info = WindowInfo(id: window, client: ClientID(x.clientBase(of: window)))
    let cls = PropertyDecoding.wmClass(x.property(window, 67)?.bytes ?? [])
    info.facts.class = cls.class
    info.facts.instance = cls.instance
    let utf8 = x.atom("UTF8_STRING")
    if let v = x.property(window, x.atom("_NET_WM_NAME")), !v.bytes.isEmpty {
      info.facts.title = PropertyDecoding.text(v.bytes, utf8: true)
    } else if let v = x.property(window, 39), !v.bytes.isEmpty {
      info.facts.title = PropertyDecoding.text(v.bytes, utf8: v.type == utf8)
    }
    if let v = x.property(window, x.atom(ProtocolAtom.secure)) {
      info.tag = TagState.decode(isCardinal: v.type == 6, format: v.format, bytes: v.bytes)
    }
    let id = ProcessInfoReader.identity(pid: x.clientPID(of: window))
    info.facts.pid = id.pid
    info.facts.exe = id.exe
    info.facts.comm = id.comm
    info.facts.uid = id.uid
    return info
  }
}
