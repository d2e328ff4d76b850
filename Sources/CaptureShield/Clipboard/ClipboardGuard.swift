internal import CSodium
internal import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// The X side of the copied-text guard: its own xcb connection and hidden window, which
/// owns the guarded selections. It watches CLIPBOARD and PRIMARY (XFixes), converts the
/// text of secure sources (TARGETS, then a text target, INCR included), keeps it in a
/// `SealedText`, and answers SelectionRequests as `ClipboardCore` decides, once RECORD
/// (`SelectionRecorder`, `ConversionLedger`) has said who sent each one. The watcher polls
/// `fileDescriptor`, calls `drain()` and `tick()`, and never dies of a failure here.
final class ClipboardGuard {
  /// What the watcher knows of a selection owner: whether its client owns a secure
  /// window, its identity, and facts for `clipboard.sources`.
  typealias OwnerInfo = (secure: Bool, identity: ClientIdentity?, facts: [Facts])

  let x: XConnection
  let window: xcb_window_t
  private(set) var core: ClipboardCore
  let log: AuditLog
  let describeOwner: (_ base: UInt32, _ window: WindowID) -> OwnerInfo
  /// Set when the published status changed; the watcher clears it.
  var statusChanged = true

  let xfixesFirst: UInt8
  /// Texts larger than this are sent with INCR: the core maximum request size (the
  /// limit every client can read without BIG-REQUESTS), less the ChangeProperty header.
  let incrThreshold: Int
  /// Largest text taken over; larger copies are left alone (and audited).
  static let maxTextSize = 16 << 20
  static let takeoverTimeout = PolicyDuration.seconds(2)
  static let transferTimeout = PolicyDuration.seconds(10)
  /// How long a request waits for its record (or its marker's) before it is refused.
  static let senderTimeout = PolicyDuration.seconds(1)
  /// A lost RECORD context is started again at most this often.
  static let recorderRetry = PolicyDuration.seconds(5)

  /// The atoms the guard reads, offers and converts with, interned once.
  struct Atoms {
    let targets: xcb_atom_t, incr: xcb_atom_t, utf8: xcb_atom_t, textPlain: xcb_atom_t
    let string: xcb_atom_t = 31, text: xcb_atom_t, hint: xcb_atom_t, timestamp: xcb_atom_t
    let atom: xcb_atom_t = 4, integer: xcb_atom_t = 19
    /// Selection name ↔ atom, and the property each takeover converts into.
    let selections: [String: xcb_atom_t]
    let names: [xcb_atom_t: String]
    let transferProperty: [String: xcb_atom_t]
    /// The selection the sync markers convert (nobody owns it).
    let sync: xcb_atom_t
  }
  let atoms: Atoms

  /// A conversion from the source in progress.
  struct Takeover {
    enum Phase {
      case targets
      case text(xcb_atom_t)
    }
    var phase: Phase
    var time: xcb_timestamp_t
    var candidates: [xcb_atom_t]
    var deadline: MonotonicTime
    /// Receiving with INCR: the chunks so far.
    var incoming: SecureBuffer?
  }

  /// What the guard holds per selection: the text being taken over, the sealed text, and
  /// the timestamps of ownership.
  struct Held {
    var takeovers: [String: Takeover] = [:]
    var sealed: [String: SealedText] = [:]
    /// When we took ownership (the TIMESTAMP target).
    var ownedSince: [String: xcb_timestamp_t] = [:]
    /// The timestamp of the latest owner change seen, per selection.
    var ownerTime: [String: xcb_timestamp_t] = [:]
  }
  var held = Held()

  /// A text sent with INCR, chunk by chunk as the reader deletes the property.
  struct Transfer {
    var requestor: xcb_window_t
    var property: xcb_atom_t
    var type: xcb_atom_t
    var data: SecureBuffer
    var offset: Int
    var finished: Bool
    var deadline: MonotonicTime
  }

  /// The serving side: texts sent with INCR, the requests the core is deciding.
  struct Serving {
    var transfers: [Transfer] = []
    var pending: [UInt64: xcb_selection_request_event_t] = [:]
    var nextRequestID: UInt64 = 1
  }
  var serving = Serving()

  /// A SelectionRequest waiting to learn who sent it, in the order requests came.
  struct Unverified {
    var event: xcb_selection_request_event_t
    /// The sync marker sent after it came (nil: none yet).
    var marker: UInt32?
    var deadline: MonotonicTime
  }

  /// The RECORD side: who sent each paste request.
  struct Senders {
    /// Who sent each ConvertSelection (nil without RECORD: then every request is refused).
    var recorder: SelectionRecorder?
    var ledger = ConversionLedger()
    var markersSent: UInt32 = 0
    var unverified: [Unverified] = []
    /// Resource-id bases of RECORD data connections that are gone (killed by another
    /// client): the server hands them to new clients, which the watcher must not ignore.
    var retiredBases: [UInt32] = []
    var lastRecorderStart = MonotonicTime(nanoseconds: 0)
  }
  var senders = Senders()
  /// Polled by the watcher: the guard's connection and the RECORD data connection.
  let pollSet: Int32

  init(
    display: String, policy: ClipboardPolicy, log: AuditLog,
    describeOwner: @escaping (_ base: UInt32, _ window: WindowID) -> OwnerInfo
  ) throws(XError) {
    guard SealedText.sodiumReady else { throw .failed("libsodium cannot be initialised") }
    x = try XConnection(display: display)
    x.errors = XErrorPolicy(log: log)
    core = ClipboardCore(policy: policy)
    self.log = log
    self.describeOwner = describeOwner
    xfixesFirst = x.firstEvent("XFIXES")
    guard xfixesFirst != 0 else { throw .missingExtension("XFIXES") }
    if let r = xcb_xfixes_query_version_reply(x.conn, xcb_xfixes_query_version(x.conn, 5, 0), nil) { free(r) }
    let a = x.atoms([
      "TARGETS", "INCR", "UTF8_STRING", "text/plain;charset=utf-8", "TEXT", "x-kde-passwordManagerHint", "TIMESTAMP",
      "CLIPBOARD", "PRIMARY", "_CAPTURE_SHIELD_CLIP_CLIPBOARD", "_CAPTURE_SHIELD_CLIP_PRIMARY",
      "_CAPTURE_SHIELD_CLIP_SYNC",
    ])
    atoms = Atoms(
      targets: a[0], incr: a[1], utf8: a[2], textPlain: a[3], text: a[4], hint: a[5], timestamp: a[6],
      selections: ["CLIPBOARD": a[7], "PRIMARY": a[8]], names: [a[7]: "CLIPBOARD", a[8]: "PRIMARY"],
      transferProperty: ["CLIPBOARD": a[9], "PRIMARY": a[10]], sync: a[11])
    let setupMax = Int(xcb_get_setup(x.conn).pointee.maximum_request_length)
    let maxUnits = min(setupMax, Int(xcb_get_maximum_request_length(x.conn)))
    incrThreshold = maxUnits * 4 - 32

    window = x.generateID()
    x.createWindow(
      window, parent: x.root, x: -1, y: -1, width: 1, height: 1, inputOnly: true,
      mask: XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue,
      values: [1, XCB_EVENT_MASK_PROPERTY_CHANGE.rawValue], checked: false)
    x.changeProperty(
      window, PredefinedAtom.wmName, type: atoms.string, format: 8, bytes: Array("CaptureShield clipboard guard".utf8))
    for sel in [a[7], a[8]] {
      x.selectSelectionInput(
        window, selection: sel,
        mask: XCB_XFIXES_SELECTION_EVENT_MASK_SET_SELECTION_OWNER.rawValue
          | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_WINDOW_DESTROY.rawValue
          | XCB_XFIXES_SELECTION_EVENT_MASK_SELECTION_CLIENT_CLOSE.rawValue)
    }
    x.flush()

    pollSet = epoll_create1(Int32(EPOLL_CLOEXEC))
    watch(x.fileDescriptor, true)
    startRecorder()
  }

  /// Starts the RECORD context (again, after another client killed its connection); while
  /// there is none, every request is refused.
  func startRecorder() {
    senders.lastRecorderStart = Clock.now()
    do {
      let r = try SelectionRecorder(control: x)
      senders.recorder = r
      // What an earlier context recorded may miss the guard's own SetSelectionOwner since:
      // nothing recorded before this context vouches for a request.
      senders.ledger = ConversionLedger()
      watch(r.fileDescriptor, true)
    } catch {
      log.error(
        "copied-text guard: cannot tell who sends paste requests (\(error)); guarded text is refused to every reader")
    }
  }

  deinit { close(pollSet) }

  /// Adds `fd` to (or removes it from) the descriptors `pollSet` reports readable.
  func watch(_ fd: Int32, _ on: Bool) {
    var ev = epoll_event()
    ev.events = EPOLLIN.rawValue
    _ = epoll_ctl(pollSet, on ? EPOLL_CTL_ADD : EPOLL_CTL_DEL, fd, &ev)
  }

  /// Readable when either connection has something (an epoll descriptor over both, so the
  /// watcher polls one descriptor for the guard).
  var fileDescriptor: Int32 { pollSet >= 0 ? pollSet : x.fileDescriptor }
  /// The guard's connections (the daemon's own: the capture detector ignores them).
  var ownBases: [UInt32] { [x.ownBase] + (senders.recorder.map { [$0.dataBase] } ?? []) }
  var hasError: Bool { x.hasError }
  var ownBase: UInt32 { x.ownBase }

  /// The earliest time `tick()` has work to do.
  var nextDeadline: MonotonicTime? {
    var all =
      held.takeovers.values.map(\.deadline) + serving.transfers.map(\.deadline)
      + senders.unverified.prefix(1).map(\.deadline)
    if let d = core.nextDeadline { all.append(d) }
    if senders.recorder == nil { all.append(senders.lastRecorderStart + Self.recorderRetry) }
    return all.min()
  }

  // MARK: Entry points for the watcher

  func drain() {
    while let ev = xcb_poll_for_event(x.conn) {
      handle(ev)
      free(ev)
    }
    readRecords()
    verifySenders()
    x.flush()
  }

  func tick() {
    let now = Clock.now()
    if senders.recorder == nil, now >= senders.lastRecorderStart + Self.recorderRetry { startRecorder() }
    for (sel, t) in held.takeovers where t.deadline <= now {
      apply(.contentFailed(selection: sel, reason: "the owner did not answer in time"))
    }
    serving.transfers.removeAll { t in
      guard t.deadline <= now else { return false }
      t.data.wipe()
      return true
    }
    if let d = core.nextDeadline, d <= now { apply(.tick) }
    readRecords()
    verifySenders()
    x.flush()
  }

  func clear(by: String) {
    apply(.clear(by: by))
    x.flush()
  }

  func policyReplaced(_ p: ClipboardPolicy) {
    apply(.policyReplaced(p))
    x.flush()
  }

  /// Gives every guarded selection up and wipes everything (daemon exit).
  func shutdown() {
    for u in senders.unverified { notify(u.event, property: 0) }
    senders.unverified = []
    apply(.shutdown)
    for t in serving.transfers { t.data.wipe() }
    serving.transfers = []
    x.flush()
  }

  /// The guard's status, its times converted through one reading of both clocks.
  func status() -> DaemonState.ClipboardState {
    core.status(at: Clock.now(), wallClock: Date().timeIntervalSince1970)
  }

  // MARK: Core

  func apply(_ event: ClipboardCore.Event) {
    for e in core.handle(event, now: Clock.now()) { perform(e) }
  }

  func perform(_ effect: ClipboardCore.Effect) {
    switch effect {
    case .takeOver(let sel):
      startTakeover(sel, time: held.ownerTime[sel] ?? 0)
    case .becomeOwner(let sel):
      guard let atom = atoms.selections[sel] else { return }
      // At the source's own timestamp, not CurrentTime: a later SetSelectionOwner of the
      // source (its clear, or a new copy) made with the time it copied at is then never
      // older than ours, which the server would ignore (leaving the guarded copy in place).
      x.setSelectionOwner(window, selection: atom, time: held.ownerTime[sel] ?? 0)
    case .serve(let id):
      guard let req = serving.pending.removeValue(forKey: id) else { return }
      serve(req)
    case .refuse(let id):
      guard let req = serving.pending.removeValue(forKey: id) else { return }
      notify(req, property: 0)
    case .giveUp(let sel):
      guard let atom = atoms.selections[sel], x.selectionOwner(atom) == window else { return }
      x.setSelectionOwner(0, selection: atom, time: 0)
    case .wipe(let sel):
      held.sealed.removeValue(forKey: sel)?.wipe()
      held.takeovers.removeValue(forKey: sel)?.incoming?.wipe()
      held.ownedSince[sel] = nil
    case .audit(let r):
      log.write(r)
    case .publishState:
      statusChanged = true
    }
  }

  // MARK: Taking over

  var textTargets: [xcb_atom_t] { [atoms.utf8, atoms.textPlain, atoms.string, atoms.text] }

  func startTakeover(_ sel: String, time: xcb_timestamp_t = 0) {
    guard let atom = atoms.selections[sel], let prop = atoms.transferProperty[sel] else { return }
    x.deleteProperty(window, prop)
    held.takeovers[sel] = Takeover(
      phase: .targets, time: time, candidates: [], deadline: Clock.now() + Self.takeoverTimeout, incoming: nil)
    x.convertSelection(requestor: window, selection: atom, target: atoms.targets, property: prop, time: time)
  }

  func requestNext(_ sel: String) {
    guard var t = held.takeovers[sel], let atom = atoms.selections[sel], let prop = atoms.transferProperty[sel] else {
      return
    }
    guard !t.candidates.isEmpty else {
      apply(.contentFailed(selection: sel, reason: "the owner offers no text target"))
      return
    }
    let target = t.candidates.removeFirst()
    t.phase = .text(target)
    held.takeovers[sel] = t
    x.convertSelection(requestor: window, selection: atom, target: target, property: prop, time: t.time)
  }

  /// The SelectionNotify answering one of our conversions.
  func conversionAnswered(_ e: xcb_selection_notify_event_t) {
    guard e.requestor == window, let sel = atoms.names[e.selection], var t = held.takeovers[sel],
      let prop = atoms.transferProperty[sel]
    else { return }
    if e.property == 0 {
      if case .targets = t.phase {  // no TARGETS: try the text targets blindly
        t.candidates = textTargets
        held.takeovers[sel] = t
      }
      requestNext(sel)
      return
    }
    guard var value = readProperty(prop) else {
      apply(.contentFailed(selection: sel, reason: "cannot read the converted text"))
      return
    }
    if value.type == atoms.incr {
      value.data.wipe()
      t.incoming = SecureBuffer(capacity: 4096)
      held.takeovers[sel] = t  // the chunks arrive as PropertyNotify(NewValue)
      return
    }
    finish(sel, value.type, &value.data)
  }

  func finish(_ sel: String, _ type: xcb_atom_t, _ data: inout SecureBuffer) {
    guard let t = held.takeovers[sel] else { return }
    switch t.phase {
    case .targets:
      let offered = Set(
        (0..<data.count / 4).map { i in
          data.bytes.load(fromByteOffset: i * 4, as: UInt32.self)
        })
      data.wipe()
      var next = t
      next.candidates = textTargets.filter { offered.contains($0) }
      held.takeovers[sel] = next
      requestNext(sel)
    case .text(let target):
      var text = data
      if target == atoms.string || type == atoms.string { text = latin1ToUTF8(data) ?? data }
      do {
        let box = try SealedText(sealing: text.bytes)
        data.wipe()
        text.wipe()
        held.takeovers[sel] = nil
        held.sealed[sel]?.wipe()
        held.sealed[sel] = box
        apply(.contentTaken(selection: sel, size: box.size))
      } catch {
        data.wipe()
        text.wipe()
        apply(.contentFailed(selection: sel, reason: "cannot seal the text (\(error))"))
      }
    }
  }

  /// An INCR chunk arrived on our window.
  func chunkArrived(_ sel: String) {
    guard var t = held.takeovers[sel], var buffer = t.incoming, let prop = atoms.transferProperty[sel] else { return }
    guard let value = readProperty(prop) else {
      apply(.contentFailed(selection: sel, reason: "cannot read an INCR chunk"))
      return
    }
    if value.data.count == 0 {
      t.incoming = nil
      held.takeovers[sel] = t
      finish(sel, value.type, &buffer)
      return
    }
    guard buffer.count + value.data.count <= Self.maxTextSize,
      SecureBuffer.append(value.data.bytes, to: &buffer)
    else {
      value.data.wipe()
      apply(.contentFailed(selection: sel, reason: "the text is larger than \(Self.maxTextSize) bytes"))
      return
    }
    value.data.wipe()
    t.incoming = buffer
    t.deadline = Clock.now() + Self.takeoverTimeout
    held.takeovers[sel] = t
  }

  /// GetProperty(delete) of our own transfer property into locked memory; the reply's
  /// copy is zeroed before it is freed.
  func readProperty(_ prop: xcb_atom_t) -> (type: xcb_atom_t, data: SecureBuffer)? {
    let ck = xcb_get_property(x.conn, 1, window, prop, 0, 0, UInt32(Self.maxTextSize / 4))
    guard let r = xcb_get_property_reply(x.conn, ck, nil) else { return nil }
    defer { free(r) }
    let len = Int(xcb_get_property_value_length(r))
    guard len <= Self.maxTextSize, r.pointee.bytes_after == 0, let buf = SecureBuffer(capacity: len) else { return nil }
    if len > 0, let p = xcb_get_property_value(r) {
      buf.pointer.copyMemory(from: p, byteCount: len)
      sodium_memzero(p, len)
    }
    buf.count = len
    return (r.pointee.type, buf)
  }

  // MARK: Events

  func handle(_ ev: UnsafeMutablePointer<xcb_generic_event_t>) {
    let raw = UnsafeRawPointer(ev)
    // An event another client sent (SendEvent sets bit 7) never stands for the server's:
    // only a SelectionNotify comes that way legitimately (an owner answering our
    // conversion, ICCCM). A forged SelectionRequest would name any requestor it likes.
    if CXCB_event_sent(ev) != 0, Int32(CXCB_event_type(ev)) != XCB_SELECTION_NOTIFY { return }
    switch Int32(CXCB_event_type(ev)) {
    case 0:
      // An X error (a reader vanished mid-transfer is expected): never fatal; the policy
      // decides how it is logged.
      x.errors.report(raw.load(as: xcb_generic_error_t.self), connection: "clipboard")
    case XCB_SELECTION_REQUEST:
      selectionRequested(raw.load(as: xcb_selection_request_event_t.self))
    case XCB_SELECTION_NOTIFY:
      conversionAnswered(raw.load(as: xcb_selection_notify_event_t.self))
    case XCB_PROPERTY_NOTIFY:
      let e = raw.load(as: xcb_property_notify_event_t.self)
      if e.window == window, e.state == UInt8(XCB_PROPERTY_NEW_VALUE.rawValue),
        let sel = atoms.transferProperty.first(where: { $0.value == e.atom })?.key, held.takeovers[sel]?.incoming != nil
      {
        chunkArrived(sel)
      } else if e.window != window, e.state == UInt8(XCB_PROPERTY_DELETE.rawValue) {
        transferProgressed(window: e.window, atom: e.atom)
      }
    case XCB_SELECTION_CLEAR:
      break  // the XFixes event says who took it
    case Int32(xfixesFirst) + Int32(XCB_XFIXES_SELECTION_NOTIFY):
      let e = raw.load(as: xcb_xfixes_selection_notify_event_t.self)
      guard let sel = atoms.names[e.selection] else { return }
      let isSet = e.subtype == UInt8(XCB_XFIXES_SELECTION_EVENT_SET_SELECTION_OWNER.rawValue)
      if isSet && e.owner == window {
        held.ownedSince[sel] = e.selection_timestamp
        return
      }
      let owner = isSet ? e.owner : 0
      if owner == 0 {
        apply(.ownerChanged(selection: sel, owner: nil, identity: nil, secureSource: false, facts: []))
        return
      }
      let base = x.clientBase(of: owner)
      let info = describeOwner(base, owner)
      held.ownerTime[sel] = e.selection_timestamp  // convert at the owner's own timestamp (ICCCM)
      apply(
        .ownerChanged(
          selection: sel, owner: ClientID(base), identity: info.identity, secureSource: info.secure, facts: info.facts))
    default:
      break
    }
  }

  // MARK: Encodings (in locked memory)

  /// STRING (ISO 8859-1) → UTF-8.
  func latin1ToUTF8(_ s: SecureBuffer) -> SecureBuffer? {
    guard let out = SecureBuffer(capacity: s.count * 2) else { return nil }
    let p = out.pointer.assumingMemoryBound(to: UInt8.self)
    var n = 0
    for b in s.bytes {
      if b < 0x80 {
        p[n] = b
        n += 1
      } else {
        p[n] = 0xC0 | (b >> 6)
        p[n + 1] = 0x80 | (b & 0x3F)
        n += 2
      }
    }
    out.count = n
    return out
  }

  /// UTF-8 → STRING (ISO 8859-1); characters outside Latin-1 become `?`.
  func utf8ToLatin1(_ s: SecureBuffer) -> SecureBuffer? {
    guard let out = SecureBuffer(capacity: s.count) else { return nil }
    let p = out.pointer.assumingMemoryBound(to: UInt8.self)
    let b = s.bytes
    var i = 0
    var n = 0
    while i < b.count {
      let c = b[i]
      var scalar: UInt32
      var len: Int
      if c < 0x80 {
        (scalar, len) = (UInt32(c), 1)
      } else if c & 0xE0 == 0xC0 {
        (scalar, len) = (UInt32(c & 0x1F), 2)
      } else if c & 0xF0 == 0xE0 {
        (scalar, len) = (UInt32(c & 0x0F), 3)
      } else {
        (scalar, len) = (UInt32(c & 0x07), 4)
      }
      for k in 1..<len where i + k < b.count { scalar = scalar << 6 | UInt32(b[i + k] & 0x3F) }
      p[n] = scalar < 0x100 ? UInt8(scalar) : UInt8(ascii: "?")
      n += 1
      i += len
    }
    out.count = n
    return out
  }
}
