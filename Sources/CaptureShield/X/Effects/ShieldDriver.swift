// The shield windows on the X server: carries out what `ShieldTable` (the pure lifecycle)
// decides, on the shield connection, through `XRequests`.

internal import CXCB
import Foundation

/// What the shield driver needs of its connection: the requests it sends and the few
/// queries it makes. `XConnection` is the real one; unit tests use a recording fake.
protocol ShieldConnection: XRequests {
  var root: UInt32 { get }
  var rootDepth: UInt8 { get }
  var blackPixel: UInt32 { get }
  func generateID() -> UInt32
  func atoms(_ names: [String]) -> [UInt32]
  /// The window's depth and geometry; nil when it is gone.
  func geometry(_ window: UInt32) -> (depth: UInt8, x: Int16, y: Int16, width: UInt16, height: UInt16)?
  /// The window's parent; nil when it is gone.
  func parent(of window: UInt32) -> UInt32?
  /// Whether the window is InputOnly; nil when it is gone.
  func isInputOnly(_ window: UInt32) -> Bool?
  /// The window's children, bottom to top; nil when it is gone.
  func children(of window: UInt32) -> [UInt32]?
  /// Whether the window is mapped (viewable or not); nil when it is gone.
  func isMapped(_ window: UInt32) -> Bool?
  /// Whether the window has a bounding or clip shape (SHAPE); nil when it is gone.
  func isShaped(_ window: UInt32) -> Bool?
  /// The first event code of an extension (0 when the server does not have it).
  func firstEvent(_ name: String) -> UInt8
  func property(_ window: UInt32, _ atom: UInt32, maxBytes: UInt32) -> PropertyValue?
  func clientBase(of xid: UInt32) -> UInt32
}

extension XConnection: ShieldConnection {
  func geometry(_ window: UInt32) -> (depth: UInt8, x: Int16, y: Int16, width: UInt16, height: UInt16)? {
    guard let g = xcb_get_geometry_reply(conn, xcb_get_geometry(conn, window), nil) else { return nil }
    defer { free(g) }
    return (g.pointee.depth, g.pointee.x, g.pointee.y, g.pointee.width, g.pointee.height)
  }

  func parent(of window: UInt32) -> UInt32? { queryTree(window)?.parent }

  func children(of window: UInt32) -> [UInt32]? { queryTree(window)?.children }

  func isInputOnly(_ window: UInt32) -> Bool? { attributes(window)?.inputOnly }

  func isMapped(_ window: UInt32) -> Bool? {
    attributes(window).map { $0.mapState != UInt8(XCB_MAP_STATE_UNMAPPED.rawValue) }
  }

  func isShaped(_ window: UInt32) -> Bool? {
    guard let r = xcb_shape_query_extents_reply(conn, xcb_shape_query_extents(conn, window), nil) else { return nil }
    defer { free(r) }
    return r.pointee.bounding_shaped != 0 || r.pointee.clip_shaped != 0
  }
}

/// An event on the shield connection, as a plain value (see `init?(_:)` for the decoding).
enum ShieldEvent: Equatable {
  case expose(window: UInt32, count: UInt16)
  case unmap(window: UInt32, event: UInt32, sequence: UInt16)
  case destroy(window: UInt32, event: UInt32)
  case create(window: UInt32, parent: UInt32)
  case map(window: UInt32, event: UInt32)
  case configure(
    window: UInt32, event: UInt32, aboveSibling: UInt32, placement: ShieldTable.Placement = .canonical,
    sequence: UInt16 = 0)
  case circulate(window: UInt32, event: UInt32)
  case reparent(window: UInt32, event: UInt32, parent: UInt32)
  case shape(window: UInt32, kind: UInt8, shaped: Bool)
  case error(code: UInt8, major: UInt8, minor: UInt16, resource: UInt32)
}

extension ShieldEvent {
  /// Decodes the events the shield connection selects; nil for any other. `shapeEvent` is
  /// the SHAPE extension's first event code on that connection (0: none).
  init?(_ ev: UnsafeMutablePointer<xcb_generic_event_t>, shapeEvent: UInt8 = 0) {
    let raw = UnsafeRawPointer(ev)
    let type = CXCB_event_type(ev)
    if shapeEvent != 0, type == shapeEvent + UInt8(XCB_SHAPE_NOTIFY) {
      let e = raw.load(as: xcb_shape_notify_event_t.self)
      self = .shape(window: e.affected_window, kind: e.shape_kind, shaped: e.shaped != 0)
      return
    }
    switch Int32(type) {
    case 0:
      let e = raw.load(as: xcb_generic_error_t.self)
      self = .error(code: e.error_code, major: e.major_code, minor: e.minor_code, resource: e.resource_id)
    case XCB_EXPOSE:
      let e = raw.load(as: xcb_expose_event_t.self)
      self = .expose(window: e.window, count: e.count)
    case XCB_UNMAP_NOTIFY:
      let e = raw.load(as: xcb_unmap_notify_event_t.self)
      self = .unmap(window: e.window, event: e.event, sequence: e.sequence)
    case XCB_DESTROY_NOTIFY:
      let e = raw.load(as: xcb_destroy_notify_event_t.self)
      self = .destroy(window: e.window, event: e.event)
    case XCB_CREATE_NOTIFY:
      let e = raw.load(as: xcb_create_notify_event_t.self)
      self = .create(window: e.window, parent: e.parent)
    case XCB_MAP_NOTIFY:
      let e = raw.load(as: xcb_map_notify_event_t.self)
      self = .map(window: e.window, event: e.event)
    case XCB_CONFIGURE_NOTIFY:
      let e = raw.load(as: xcb_configure_notify_event_t.self)
      self = .configure(
        window: e.window, event: e.event, aboveSibling: e.above_sibling,
        placement: .init(x: e.x, y: e.y, width: e.width, height: e.height, border: e.border_width),
        sequence: e.sequence)
    case XCB_CIRCULATE_NOTIFY:
      let e = raw.load(as: xcb_circulate_notify_event_t.self)
      self = .circulate(window: e.window, event: e.event)
    case XCB_REPARENT_NOTIFY:
      let e = raw.load(as: xcb_reparent_notify_event_t.self)
      self = .reparent(window: e.window, event: e.event, parent: e.parent)
    default:
      return nil
    }
  }
}

/// Creates, keeps and removes shields: black-patterned InputOutput child windows,
/// oversized (clipped by the parent), stacked above the app's own children. It owns
/// its own X connection so that, in `closed` fail mode, the shields outlive the daemon
/// (SetCloseDownMode RetainPermanent) without also keeping the daemon's other windows.
///
/// The lifecycle (what exists, what is up, what to send) is `ShieldTable`, a pure state
/// machine; this class carries out its operations and owns the X resources that are not
/// lifecycle (tiles, the label's GC and font, each target's depth). With `XEffects` it is
/// one of the daemon's X writers (docs/architecture.md); the RECORD thread maps the
/// shields the engine named in advance (`RecordPump`).
final class ShieldDriver {
  /// The largest size X allows; the parent clips it.
  static let shieldSize: UInt16 = 32767
  let x: any ShieldConnection
  private(set) var failMode: FailMode
  var input: ShieldInput
  var label: String
  private(set) var table = ShieldTable()
  /// What shields are drawn with: background tiles by depth (the child inherits its
  /// parent's depth), each target's depth, the label's GC and font.
  private struct Paint {
    var tiles: [UInt8: UInt32] = [:]
    var depthOf: [WindowID: UInt8] = [:]
    var gc: UInt32 = 0
    var font: UInt32 = 0
  }
  private var paint = Paint()
  let atomShield: UInt32
  let atomShields: UInt32
  /// The registry of record (see `ShieldRegistryFile`); nil: nothing is adopted.
  let registryFile: ShieldRegistryFile?
  /// Errors on the shield connection.
  var errors = XErrorPolicy(log: nil)
  /// The last `shieldAtOnce` targets (at most 256; see `XErrorPolicy.shieldMeaning`: a
  /// shield's BadMatch under one of them met an InputOnly window, usually dropped already
  /// by the time the error arrives).
  private var recentAtOnce = RecentSet<WindowID>(limit: 256)
  /// The SHAPE extension's first event code on the shield connection (ShapeNotify).
  let shapeEvent: UInt8
  /// Secure views: the rectangles (window coordinates) a target's shield is shaped to; nil:
  /// the whole window (set by the loop from the engine's decision, `SecureReason.views`).
  var viewsOf: (WindowID) -> [ViewRect]? = { _ in nil }
  /// The shapes of views shields.
  private struct Shapes {
    /// Bounding shapes we set on views shields whose ShapeNotify has not come back yet.
    var own: [UInt32: Int] = [:]
    /// The rectangles each target's shield is shaped to now (absent: the whole window).
    var shaped: [WindowID: [ViewRect]] = [:]
  }
  private var shapes = Shapes()

  /// Something a shield event means for the engine.
  enum Report: Equatable {
    /// Someone else unmapped, destroyed, moved, resized, shaped, restacked, reparented or
    /// redirected a shield we keep (repaired already).
    case lost(WindowID, how: String)
  }

  init(
    connection: any ShieldConnection, failMode: FailMode, input: ShieldInput, label: String,
    registryFile: ShieldRegistryFile? = nil
  ) {
    x = connection
    self.registryFile = registryFile
    self.failMode = failMode
    self.input = input
    self.label = label
    let a = x.atoms(["_CAPTURE_SHIELD_SHIELD", "_CAPTURE_SHIELD_SHIELDS"])
    atomShield = a[0]
    atomShields = a[1]
    shapeEvent = x.firstEvent("SHAPE")
    setFailMode(failMode)
    paint.font = x.generateID()
    // No core fonts: the pattern alone tells users why the window is dark.
    if !x.openFont(paint.font, name: "fixed") { paint.font = 0 }
  }

  /// target → shield window.
  var shields: [WindowID: UInt32] { table.shields }

  /// Whether `window` is one of our shields.
  func isShield(_ window: UInt32) -> Bool { table.targetOf[window] != nil }

  /// Open: shields die with our connection. Closed: they are retained after we die.
  func setFailMode(_ mode: FailMode) {
    failMode = mode
    x.setCloseDownMode(retainPermanent: mode == .closed)
  }

  /// Pixel value for an opaque RGB colour at `depth` (TrueColor assumed for 24/32).
  private func pixel(_ rgb: UInt32, depth: UInt8) -> UInt32 {
    switch depth {
    case 32: return 0xFF00_0000 | rgb
    case 24: return rgb
    default: return x.blackPixel
    }
  }

  /// A 16x16 diagonal-stripe tile in two dark greys, at `depth`.
  private func tile(depth: UInt8) -> UInt32 {
    if let t = paint.tiles[depth] { return t }
    let pm = x.generateID()
    x.createPixmap(pm, depth: depth, drawable: x.root, width: 16, height: 16)
    let g = x.generateID()
    x.createGC(g, drawable: pm, mask: XCB_GC_FOREGROUND.rawValue, values: [pixel(0x1c1c1c, depth: depth)])
    x.fillRectangles(pm, gc: g, [(0, 0, 16, 16)])
    x.changeGC(g, mask: XCB_GC_FOREGROUND.rawValue, values: [pixel(0x2e2e2e, depth: depth)])
    var stripes: [(x: Int16, y: Int16, width: UInt16, height: UInt16)] = []
    for i in 0..<16 {
      // a 4-pixel-wide diagonal band
      for w in 0..<4 { stripes.append((Int16((i + w) % 16), Int16(i), 1, 1)) }
    }
    x.fillRectangles(pm, gc: g, stripes)
    x.freeGC(g)
    paint.tiles[depth] = pm
    return pm
  }

  /// Takes over shields left by an earlier daemon (closed mode) or by our own killed shield
  /// connection. Only what provably came from us and provably covers is adopted: the pairs
  /// of `registryFile` (this user's 0600 file; the root property is anybody's), each still
  /// our marked and named shield in its target (else it is not ours any more: left alone),
  /// mapped (a hidden one is destroyed without a word), and covering: InputOutput, at
  /// (0,0), 32767x32767, no SHAPE, on top of the target's children (else destroyed and
  /// reported: a new shield replaces it). An adopted shield gets
  /// our tile again. What was refused is in `refusedAdoptions`. Returns the adopted targets.
  func adoptExisting() -> [WindowID] {
    refusedAdoptions = []
    let recorded = registryFile?.read() ?? []
    let ours = Set(recorded.map(\.shield))
    for (s, t) in rootRegistry() where !ours.contains(s) {
      refusedAdoptions.append(
        (s, t, "listed in _CAPTURE_SHIELD_SHIELDS but not in the daemon's own registry file; left alone"))
    }
    var adopted: [WindowID] = []
    for (s, t) in recorded where table.shields[t] == nil && table.targetOf[s] == nil {
      guard x.parent(of: s) == t, x.clientBase(of: s) != x.clientBase(of: t),
        let mark = x.property(s, atomShield, maxBytes: 64),
        PropertyDecoding.cardinal(format: mark.format, bytes: mark.bytes) == t,
        x.property(s, PredefinedAtom.wmName, maxBytes: 64)?.bytes == Array("CaptureShield".utf8)
      else { continue }
      guard x.isMapped(s) == true else {
        // Hidden when the daemon stopped (`shield.when: "capturing"`): nothing to report; a
        // new shield goes up when one is needed.
        x.destroyWindow(s)
        continue
      }
      if let why = coverageFault(s, target: t) {
        x.destroyWindow(s)
        refusedAdoptions.append((s, t, why + "; destroyed (a new shield replaces it)"))
        continue
      }
      run(table.handle(.adopted(t, shield: s)))
      run([.retile(t, shield: s)])
      adopted.append(t)
    }
    return adopted
  }

  /// Shields an adoption refused since the last `adoptExisting`: the window, its target
  /// and why.
  private(set) var refusedAdoptions: [(shield: UInt32, target: WindowID, why: String)] = []

  /// The (shield, target) pairs of the root property `_CAPTURE_SHIELD_SHIELDS`.
  private func rootRegistry() -> [(UInt32, WindowID)] {
    guard let v = x.property(x.root, atomShields, maxBytes: 1 << 20), v.format == 32 else { return [] }
    return (0..<(v.bytes.count / 8)).compactMap { i in
      let s = PropertyDecoding.cardinal(format: 32, bytes: Array(v.bytes[(i * 8)..<(i * 8 + 4)])) ?? 0
      let t = PropertyDecoding.cardinal(format: 32, bytes: Array(v.bytes[(i * 8 + 4)..<(i * 8 + 8)])) ?? 0
      return s != 0 && t != 0 ? (s, t) : nil
    }
  }

  /// Why a shield of ours would not cover its target now (nil: it covers).
  private func coverageFault(_ s: UInt32, target t: WindowID) -> String? {
    guard x.isInputOnly(s) == false else { return "InputOnly" }
    guard let g = x.geometry(s), g.x == 0, g.y == 0, g.width == Self.shieldSize, g.height == Self.shieldSize else {
      return "moved or resized"
    }
    guard x.isShaped(s) == false else { return "shaped (SHAPE)" }
    guard x.children(of: t)?.last == s else { return "not on top of the window's children" }
    return nil
  }

  /// Puts a shield up in `target` (idempotent: re-maps and re-raises an existing one).
  /// Returns false when the target no longer exists.
  @discardableResult
  func shield(_ target: WindowID) -> Bool { run(table.handle(.shield(target))) }

  /// Creates a shield for a secure window ahead of time, unmapped, so that putting it up
  /// later is a single MapWindow (no round trip): what quarantine needs to beat a
  /// one-shot tool's first request.
  func prepare(_ target: WindowID) { run(table.handle(.prepare(target))) }

  /// Puts a plain dark shield into a just-created window at once, with no round trip
  /// (its depth is not known yet, so a background pixel opaque at any depth instead of
  /// the tile). Used while shields are up, so a new window never shows unshielded for
  /// longer than it takes the server to reach this request.
  func shieldAtOnce(_ target: WindowID) {
    recentAtOnce.insert(target)
    run(table.handle(.shieldAtOnce(target)))
  }

  /// Takes the shield down: unmaps it (at the next `commitUnmaps`) and keeps it for the
  /// next time (a MapWindow).
  func unshield(_ target: WindowID) { run(table.handle(.unshield(target))) }

  /// Whether `commitUnmaps` has anything to send.
  var hasPendingUnmaps: Bool { table.hasPendingUnmaps }

  /// Sends the UnmapWindow requests of the shields taken down since the last call.
  func commitUnmaps() { run(table.handle(.commitUnmaps)) }

  /// The prepared shields of `targets` that are down (or go down at the next
  /// `commitUnmaps`): what a new client's record may put up from the pump thread without
  /// asking anyone (see `RecordPump`).
  func armable(_ targets: [WindowID]) -> (shields: [UInt32], targets: [WindowID]) { table.armable(targets) }

  /// The pump mapped `target`'s shield: it is up on the server (unless a removal of ours
  /// is still to be sent, which then takes it down again).
  func markMapped(_ target: WindowID) { run(table.handle(.markMapped(target))) }

  /// Destroys a shield put up by `shieldAtOnce` that turned out not to be wanted.
  func dropProvisional(_ target: WindowID) { run(table.handle(.dropProvisional(target))) }

  /// Destroys a shield for good.
  func destroy(_ target: WindowID) { run(table.handle(.destroy(target))) }

  /// Removes every shield (open-mode shutdown).
  func removeAll() {
    for t in table.shields.keys.sorted() { destroy(t) }
    writeRegistry()
  }

  /// Forgets a target that was destroyed (its shield died with it).
  func forget(_ target: WindowID) {
    paint.depthOf[target] = nil
    shapes.shaped[target] = nil
    run(table.handle(.forget(target)))
  }

  /// Publishes the (shield, target) pairs on the root when they changed.
  func writeRegistry() { run(table.handle(.flushRegistry)) }

  /// A client's Composite RedirectWindow (Manual) of `window`, seen through RECORD (no
  /// event tells): if it is one of our shields, it is replaced by a new one (not
  /// redirected). `how` names the client for the audit record.
  func redirected(_ window: UInt32, how: String) -> Report? {
    var report: Report?
    run(table.handle(.redirected(window: window, how: how))) { report = $0 }
    return report
  }

  /// Handles one event from the shield connection.
  func handle(_ event: ShieldEvent) -> Report? {
    let ops: [ShieldTable.Operation]
    switch event {
    case .error(let code, let major, let minor, let resource):
      // A target vanished mid-request is expected; anything else is logged as an error.
      var e = xcb_generic_error_t()
      (e.error_code, e.major_code, e.minor_code, e.resource_id) = (code, major, minor, resource)
      let meaning = XErrorPolicy.shieldMeaning(
        code: code, major: major, resourceIsTarget: recentAtOnce.contains(resource))
      errors.report(
        e, connection: "shield", meaning: meaning,
        why: code == XErrorPolicy.Code.badMatch ? "a shield on an InputOnly window" : "a resource vanished")
      return nil
    case .expose(let w, let count):
      guard count == 0 else { return nil }
      ops = table.handle(.exposed(window: w))
    case .unmap(let w, let parent, let seq):
      ops = table.handle(.unmapNotify(window: w, event: parent, sequence: seq))
    case .destroy(let w, let parent):
      // Destroyed with its parent (no tampering) when the parent is gone too: ask only
      // about our own shields.
      guard table.targetOf[w] == parent else { return nil }
      ops = table.handle(.destroyNotify(window: w, event: parent, targetAlive: x.geometry(parent) != nil))
    case .create(let w, let parent):
      ops = table.handle(.childCreated(window: w, parent: parent))
    case .map(let w, let parent):
      ops = table.handle(.childMapped(window: w, parent: parent))
    case .configure(let w, let parent, let above, let placement, let seq):
      ops = table.handle(
        .childRestacked(window: w, parent: parent, aboveSibling: above, placement: placement, sequence: seq))
    case .circulate(let w, let parent):
      ops = table.handle(.childCirculated(window: w, parent: parent))
    case .reparent(let w, let event, let parent):
      ops = table.handle(.reparented(window: w, event: event, parent: parent))
    case .shape(let w, let kind, let shaped):
      if kind == 0, shaped, let n = shapes.own[w] {
        shapes.own[w] = n > 1 ? n - 1 : nil  // our own: a views shield shaped to its rectangles
        return nil
      }
      ops = table.handle(.shapeChanged(window: w, kind: kind, shaped: shaped))
    }
    var report: Report?
    run(ops) { report = $0 }
    return report
  }

  /// Carries out the table's operations in order. Returns false (and stops) when a target
  /// turned out to be gone.
  @discardableResult
  private func run(_ ops: [ShieldTable.Operation], lost: (Report) -> Void = { _ in }) -> Bool {
    for op in ops {
      switch op {
      case .create(let t, let mapped):
        guard let s = create(in: t, mapped: mapped) else { return false }
        run(table.handle(.created(t, shield: s, mapped: mapped, plain: false)))
      case .createPlain(let t):
        let s = createPlain(in: t)
        run(table.handle(.created(t, shield: s, mapped: true, plain: true)))
      case .retile(let t, let s):
        guard let g = x.geometry(t) else { return false }
        paint.depthOf[t] = g.depth
        x.changeAttributes(s, mask: XCB_CW_BACK_PIXMAP.rawValue, values: [tile(depth: g.depth)])
        x.clearArea(s)
      case .map(let s):
        x.mapWindow(s)
      case .raise(let s):
        run(table.handle(.configureSent(shield: s, sequence: x.raiseWindow(s))))
      case .replace(let s):
        let seq = x.placeWindow(s, x: 0, y: 0, width: Self.shieldSize, height: Self.shieldSize)
        run(table.handle(.configureSent(shield: s, sequence: seq)))
      case .checkStacking(let t, let s, let tampered, let how):
        // Fail safe: ask the server rather than trust the event (a round trip, only on a
        // shield's own ConfigureNotify or CirculateNotify). Gone: its DestroyNotify follows.
        guard let children = x.children(of: t), children.contains(s), children.last != s else { continue }
        run(table.handle(.configureSent(shield: s, sequence: x.raiseWindow(s))))
        if tampered { lost(.lost(t, how: how)) }
      case .resetShape(let s, let kind):
        if kind == 0, let t = table.targetOf[s], viewsOf(t) != nil {
          shapeToViews(s, target: t)  // a views shield shaped by someone else: its own shape again
        } else {
          x.shapeReset(s, kind: kind)
        }
      case .discard(let s):
        x.destroyWindow(s)
      case .unmap(let s):
        run(table.handle(.unmapSent(shield: s, sequence: x.unmapWindow(s))))
      case .destroy(let s, let t):
        x.destroyWindow(s)
        x.selectEvents(t, 0)
      case .watch(let t, let s):
        // SubstructureNotify on the target: we hear of its children (to stay on top) and
        // of our shield being unmapped, destroyed, moved, resized, restacked or reparented
        // by someone else; ShapeNotify of the shield: of it being shaped.
        x.selectEvents(t, XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue | XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue)
        x.shapeSelectInput(s)
      case .writeRegistry(let pairs):
        x.changeProperty(x.root, atomShields, cardinals: pairs)
        registryFile?.write(pairs)
      case .drawLabel(let s, let t):
        drawLabel(shield: s, depth: paint.depthOf[t] ?? x.rootDepth)
      case .lost(let t, let how):
        lost(.lost(t, how: how))
      }
    }
    return true
  }

  /// Creates a tiled shield in `target`; nil when the target is gone.
  private func create(in target: WindowID, mapped: Bool) -> UInt32? {
    // The child inherits the parent's depth and visual: the tile must match that depth.
    // A window's depth never changes, so it is asked once per window.
    let depth: UInt8
    if let d = paint.depthOf[target] {
      depth = d
    } else {
      guard let g = x.geometry(target) else { return nil }
      depth = g.depth
    }
    let s = x.generateID()
    var mask = XCB_CW_BACK_PIXMAP.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue
    var values: [UInt32] = [tile(depth: depth), 1, XCB_EVENT_MASK_EXPOSURE.rawValue]
    if input == .block {
      mask |= XCB_CW_DONT_PROPAGATE.rawValue
      values.append(
        XCB_EVENT_MASK_BUTTON_PRESS.rawValue | XCB_EVENT_MASK_BUTTON_RELEASE.rawValue
          | XCB_EVENT_MASK_POINTER_MOTION.rawValue)
    }
    guard
      x.createWindow(
        s, parent: target, x: 0, y: 0, width: Self.shieldSize, height: Self.shieldSize, inputOnly: false,
        mask: mask, values: values, checked: true)
    else { return nil }
    mark(s, target: target)
    shapeToViews(s, target: target)
    if mapped { x.mapWindow(s) }
    paint.depthOf[target] = depth
    return s
  }

  /// Creates a plain shield in `target`, mapped, and flushes: no round trip.
  private func createPlain(in target: WindowID) -> UInt32 {
    let s = x.generateID()
    x.createWindow(
      s, parent: target, x: 0, y: 0, width: Self.shieldSize, height: Self.shieldSize, inputOnly: false,
      mask: XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue,
      values: [0xFF1C_1C1C, 1, XCB_EVENT_MASK_EXPOSURE.rawValue], checked: false)
    mark(s, target: target)
    x.mapWindow(s)
    x.flush()
    return s
  }

  /// The input shape, the mark (`_CAPTURE_SHIELD_SHIELD` = target) and the name of a new shield.
  private func mark(_ s: UInt32, target: WindowID) {
    // An empty input shape: clicks and pointer motion fall through to the app.
    if input == .passthrough { x.shapeInputEmpty(s) }
    x.changeProperty(s, atomShield, cardinals: [target])
    x.changeProperty(
      s, PredefinedAtom.wmName, type: PredefinedAtom.string, format: 8, bytes: Array("CaptureShield".utf8))
  }

  /// Shapes the shield of a window with secure views to their rectangles (nothing for a
  /// whole window). Our own ShapeNotify that follows is counted (`shapes.own`).
  private func shapeToViews(_ s: UInt32, target: WindowID) {
    shapes.shaped[target] = viewsOf(target)
    guard let r = shapes.shaped[target] else { return }
    shapes.own[s, default: 0] += 1
    x.shapeBounding(s, rects: r)
  }

  /// The target's secure views may have changed (`viewsOf`): its shield, if any, is shaped
  /// to them again, or covers the whole window once it has none. Nothing when unchanged.
  func viewsChanged(_ target: WindowID) {
    let want = viewsOf(target)
    guard want != shapes.shaped[target] else { return }
    guard let s = table.shield(of: target) else {
      shapes.shaped[target] = nil
      return
    }
    if want != nil {
      shapeToViews(s, target: target)
    } else {
      shapes.shaped[target] = nil
      x.shapeReset(s, kind: 0)
    }
  }

  /// `viewsChanged` for every shield shaped now (a window's decision may have changed from
  /// its views to the whole window: a rule, a tag).
  func reshapeViews() {
    for t in shapes.shaped.keys.sorted() { viewsChanged(t) }
  }

  /// Stacks the shield above every other child of `target`.
  func raise(_ target: WindowID) {
    guard let s = table.shields[target] else { return }
    run(table.handle(.configureSent(shield: s, sequence: x.raiseWindow(s))))
  }

  private func drawLabel(shield s: UInt32, depth: UInt8) {
    guard paint.font != 0, !label.isEmpty else { return }
    if paint.gc == 0 || depth != x.rootDepth {
      // GCs are per depth; shields of other depths get the pattern only.
      guard depth == x.rootDepth else { return }
      paint.gc = x.generateID()
      x.createGC(
        paint.gc, drawable: s, mask: XCB_GC_FOREGROUND.rawValue | XCB_GC_BACKGROUND.rawValue | XCB_GC_FONT.rawValue,
        values: [pixel(0xd0d0d0, depth: depth), pixel(0x1c1c1c, depth: depth), paint.font])
    }
    let bytes = Array(label.unicodeScalars.map { $0.isASCII ? UInt8($0.value) : UInt8(ascii: "?") }.prefix(200))
    x.drawText(s, gc: paint.gc, x: 8, y: 18, bytes)
  }
}
