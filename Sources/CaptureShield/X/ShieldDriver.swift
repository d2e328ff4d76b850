internal import CXCB
import Foundation

/// Creates, keeps and removes shields: black-patterned InputOutput child windows,
/// oversized (clipped by the parent), stacked above the app's own children. It owns
/// its own X connection so that, in `closed` fail mode, the shields outlive the daemon
/// (SetCloseDownMode RetainPermanent) without also keeping the daemon's other windows.
///
/// This and `XEffects` are the only places that send state-changing requests to X (and
/// `RecordPump`, which maps the shields the engine named in advance when a client connects).
final class ShieldDriver {
  /// The largest size X allows; the parent clips it.
  static let shieldSize: UInt16 = 32767
  let x: XConnection
  private(set) var failMode: FailMode
  var input: ShieldInput
  var label: String
  /// target window → shield window.
  private(set) var shields: [WindowID: xcb_window_t] = [:]
  private var targetOf: [xcb_window_t: WindowID] = [:]
  /// Background tiles by depth (the child inherits its parent's depth).
  private var tiles: [UInt8: xcb_pixmap_t] = [:]
  private var depthOf: [WindowID: UInt8] = [:]
  /// Shields that exist but are unmapped (taken down, or prepared ahead of time).
  private var hidden: Set<WindowID> = []
  /// Shields put up by `shieldAtOnce`, still without the tile.
  private var plain: Set<WindowID> = []
  private var gc: xcb_gcontext_t = 0
  private var font: xcb_font_t = 0
  let atomShield: xcb_atom_t
  let atomShields: xcb_atom_t
  let atomCardinal: xcb_atom_t = 6  // XA_CARDINAL
  /// Registry of shields on the root, so a restarted daemon finds and adopts them.
  private var registryDirty = true
  /// Sequence numbers (low 16 bits, as events carry them) of our UnmapWindow requests of
  /// each shield whose UnmapNotify has not come yet. Each such event carries exactly its
  /// request's number; an unmap by another client carries another one. Without this, our
  /// own unmap seen after we had mapped the shield again (a session ending and the next
  /// starting within one round trip) looked like tampering, and the "re-assert" map made
  /// the shield flap.
  private var ownUnmaps: [xcb_window_t: [UInt16]] = [:]
  /// Shields taken down in the model whose UnmapWindow is not sent yet: removals go out in
  /// `commitUnmaps` (with quarantine on, only when no new client's record is waiting; see
  /// `RecordPump`). A shield put up again before that is simply left up.
  private var pendingUnmaps: Set<WindowID> = []

  /// Something a shield event means for the engine.
  enum Report {
    /// Someone else unmapped or destroyed a shield we keep.
    case lost(WindowID, how: String)
  }

  init(connection: XConnection, failMode: FailMode, input: ShieldInput, label: String) {
    x = connection
    self.failMode = failMode
    self.input = input
    self.label = label
    let a = x.atoms(["_CAPTURE_SHIELD_SHIELD", "_CAPTURE_SHIELD_SHIELDS"])
    atomShield = a[0]
    atomShields = a[1]
    setFailMode(failMode)
    let fontName = "fixed"
    font = x.generateID()
    let fck = fontName.withCString { xcb_open_font_checked(x.conn, font, UInt16(strlen($0)), $0) }
    if let err = xcb_request_check(x.conn, fck) {
      free(err)
      font = 0  // no core fonts: the pattern alone tells users why the window is dark
    }
  }

  /// Open: shields die with our connection. Closed: they are retained after we die.
  func setFailMode(_ mode: FailMode) {
    failMode = mode
    let m = mode == .closed ? XCB_CLOSE_DOWN_RETAIN_PERMANENT : XCB_CLOSE_DOWN_DESTROY_ALL
    xcb_set_close_down_mode(x.conn, UInt8(m.rawValue))
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
  private func tile(depth: UInt8) -> xcb_pixmap_t {
    if let t = tiles[depth] { return t }
    let pm = x.generateID()
    xcb_create_pixmap(x.conn, depth, pm, x.root, 16, 16)
    let g = x.generateID()
    var v: [UInt32] = [pixel(0x1c1c1c, depth: depth)]
    xcb_create_gc(x.conn, g, pm, XCB_GC_FOREGROUND.rawValue, &v)
    var all = xcb_rectangle_t(x: 0, y: 0, width: 16, height: 16)
    xcb_poly_fill_rectangle(x.conn, pm, g, 1, &all)
    v = [pixel(0x2e2e2e, depth: depth)]
    xcb_change_gc(x.conn, g, XCB_GC_FOREGROUND.rawValue, &v)
    var stripes: [xcb_rectangle_t] = []
    for i in 0..<16 {
      // a 4-pixel-wide diagonal band
      for w in 0..<4 { stripes.append(xcb_rectangle_t(x: Int16((i + w) % 16), y: Int16(i), width: 1, height: 1)) }
    }
    xcb_poly_fill_rectangle(x.conn, pm, g, UInt32(stripes.count), stripes)
    xcb_free_gc(x.conn, g)
    tiles[depth] = pm
    return pm
  }

  /// Takes over shields left by an earlier daemon (closed mode) from the root registry.
  /// Returns the targets that have a live shield.
  func adoptExisting() -> [WindowID] {
    guard let v = x.property(x.root, atomShields, maxBytes: 1 << 20), v.format == 32 else { return [] }
    var adopted: [WindowID] = []
    let n = v.bytes.count / 8
    for i in 0..<n {
      let s = PropertyDecoding.cardinal(format: 32, bytes: Array(v.bytes[(i * 8)..<(i * 8 + 4)])) ?? 0
      let t = PropertyDecoding.cardinal(format: 32, bytes: Array(v.bytes[(i * 8 + 4)..<(i * 8 + 8)])) ?? 0
      guard s != 0, t != 0, let tree = x.queryTree(s), tree.parent == t,
        let mark = x.property(s, atomShield), PropertyDecoding.cardinal(format: mark.format, bytes: mark.bytes) == t,
        looksLikeOurShield(s, target: t)
      else { continue }
      shields[t] = s
      targetOf[s] = t
      watch(target: t)
      adopted.append(t)
    }
    registryDirty = true
    return adopted
  }

  /// A window listed in the registry is adopted only if it has a shield's shape: created
  /// by another client than the window it sits in (not one of the app's own children
  /// marked by a forger), InputOutput, at (0,0), 32767x32767, named "CaptureShield".
  /// Anything else is left alone: the daemon never destroys a window it cannot vouch for.
  private func looksLikeOurShield(_ s: xcb_window_t, target t: WindowID) -> Bool {
    guard x.clientBase(of: s) != x.clientBase(of: t),
      let a = x.attributes(s), !a.inputOnly,
      let geo = xcb_get_geometry_reply(x.conn, xcb_get_geometry(x.conn, s), nil)
    else { return false }
    let g = geo.pointee
    free(geo)
    guard g.x == 0, g.y == 0, g.width == Self.shieldSize, g.height == Self.shieldSize else { return false }
    let name = x.property(s, 39 /* WM_NAME */)?.bytes ?? []
    return name == Array("CaptureShield".utf8)
  }

  private func watch(target: WindowID) {
    // SubstructureNotify on the target: we hear of its children (to stay on top) and
    // of our shield being unmapped or destroyed by someone else.
    var mask: [UInt32] = [XCB_EVENT_MASK_SUBSTRUCTURE_NOTIFY.rawValue | XCB_EVENT_MASK_STRUCTURE_NOTIFY.rawValue]
    xcb_change_window_attributes(x.conn, target, XCB_CW_EVENT_MASK.rawValue, &mask)
  }

  /// Puts a shield up in `target` (idempotent: re-maps and re-raises an existing one).
  /// Returns false when the target no longer exists.
  @discardableResult
  func shield(_ target: WindowID) -> Bool { place(target, mapped: true) }

  /// Creates a shield for a secure window ahead of time, unmapped, so that putting it up
  /// later is a single MapWindow (no round trip): what quarantine needs to beat a
  /// one-shot tool's first request.
  func prepare(_ target: WindowID) {
    if shields[target] == nil { place(target, mapped: false) }
  }

  @discardableResult
  private func place(_ target: WindowID, mapped: Bool) -> Bool {
    if let s = shields[target] {
      hidden.remove(target)
      pendingUnmaps.remove(target)
      if plain.contains(target) {
        // Put up at CreateNotify without a round trip: now give it the striped tile.
        guard let geo = xcb_get_geometry_reply(x.conn, xcb_get_geometry(x.conn, target), nil) else { return false }
        let depth = geo.pointee.depth
        free(geo)
        depthOf[target] = depth
        var v: [UInt32] = [tile(depth: depth)]
        xcb_change_window_attributes(x.conn, s, XCB_CW_BACK_PIXMAP.rawValue, &v)
        xcb_clear_area(x.conn, 1, s, 0, 0, 0, 0)
        plain.remove(target)
      }
      xcb_map_window(x.conn, s)
      raise(target)
      return true
    }
    // The child inherits the parent's depth and visual: the tile must match that depth.
    // A window's depth never changes, so it is asked once per window.
    let depth: UInt8
    if let d = depthOf[target] {
      depth = d
    } else {
      guard let geo = xcb_get_geometry_reply(x.conn, xcb_get_geometry(x.conn, target), nil) else {
        return false
      }
      depth = geo.pointee.depth
      free(geo)
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
    let ck = xcb_create_window_checked(
      x.conn, 0 /* CopyFromParent depth */, s, target, 0, 0, Self.shieldSize, Self.shieldSize, 0,
      UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue), 0 /* CopyFromParent visual */, mask, values)
    if let err = xcb_request_check(x.conn, ck) {
      free(err)
      return false
    }
    if input == .passthrough {
      // An empty input shape: clicks and pointer motion fall through to the app.
      xcb_shape_rectangles(
        x.conn, UInt8(XCB_SHAPE_SO_SET.rawValue), UInt8(XCB_SHAPE_SK_INPUT.rawValue), 0, s, 0, 0, 0, nil)
    }
    var mark = target
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), s, atomShield, atomCardinal, 32, 1, &mark)
    let name = "CaptureShield"
    xcb_change_property(
      x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), s, 39 /* WM_NAME */, 31 /* STRING */, 8,
      UInt32(name.utf8.count), name)
    if mapped { xcb_map_window(x.conn, s) } else { hidden.insert(target) }
    depthOf[target] = depth
    shields[target] = s
    targetOf[s] = target
    watch(target: target)
    registryDirty = true
    return true
  }

  /// Puts a plain dark shield into a just-created window at once, with no round trip
  /// (its depth is not known yet, so a background pixel opaque at any depth instead of
  /// the tile). Used while shields are up, so a new window never shows unshielded for
  /// longer than it takes the server to reach this request.
  func shieldAtOnce(_ target: WindowID) {
    guard shields[target] == nil else { return }
    let s = x.generateID()
    var values: [UInt32] = [0xFF1C_1C1C, 1, XCB_EVENT_MASK_EXPOSURE.rawValue]
    xcb_create_window(
      x.conn, 0, s, target, 0, 0, Self.shieldSize, Self.shieldSize, 0, UInt16(XCB_WINDOW_CLASS_INPUT_OUTPUT.rawValue),
      0,
      XCB_CW_BACK_PIXEL.rawValue | XCB_CW_OVERRIDE_REDIRECT.rawValue | XCB_CW_EVENT_MASK.rawValue, &values)
    if input == .passthrough {
      xcb_shape_rectangles(
        x.conn, UInt8(XCB_SHAPE_SO_SET.rawValue), UInt8(XCB_SHAPE_SK_INPUT.rawValue), 0, s, 0, 0, 0, nil)
    }
    var mark = target
    xcb_change_property(x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), s, atomShield, atomCardinal, 32, 1, &mark)
    let name = "CaptureShield"
    xcb_change_property(
      x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), s, 39 /* WM_NAME */, 31 /* STRING */, 8,
      UInt32(name.utf8.count), name)
    xcb_map_window(x.conn, s)
    x.flush()
    shields[target] = s
    targetOf[s] = target
    plain.insert(target)
    watch(target: target)
    registryDirty = true
  }

  /// Stacks the shield above every other child of `target`.
  func raise(_ target: WindowID) {
    guard let s = shields[target] else { return }
    var v: [UInt32] = [UInt32(XCB_STACK_MODE_ABOVE.rawValue)]
    xcb_configure_window(x.conn, s, UInt16(XCB_CONFIG_WINDOW_STACK_MODE.rawValue), &v)
  }

  /// Takes the shield down: unmaps it (at the next `commitUnmaps`) and keeps it for the
  /// next time (a MapWindow).
  func unshield(_ target: WindowID) {
    guard shields[target] != nil, !hidden.contains(target) else { return }
    hidden.insert(target)
    pendingUnmaps.insert(target)
  }

  /// Whether `commitUnmaps` has anything to send.
  var hasPendingUnmaps: Bool { !pendingUnmaps.isEmpty }

  /// Sends the UnmapWindow requests of the shields taken down since the last call.
  func commitUnmaps() {
    for t in pendingUnmaps.sorted() {
      guard let s = shields[t] else { continue }
      ownUnmaps[s, default: []].append(UInt16(truncatingIfNeeded: xcb_unmap_window(x.conn, s).sequence))
    }
    pendingUnmaps = []
  }

  /// The prepared shields of `targets` that are down (or go down at the next
  /// `commitUnmaps`): what a new client's record may put up from the pump thread without
  /// asking anyone (see `RecordPump`).
  func armable(_ targets: [WindowID]) -> (shields: [UInt32], targets: [WindowID]) {
    var out: (shields: [UInt32], targets: [WindowID]) = ([], [])
    for t in targets {
      guard let s = shields[t], hidden.contains(t) else { continue }
      out.shields.append(s)
      out.targets.append(t)
    }
    return out
  }

  /// The pump mapped `target`'s shield: it is up on the server (unless a removal of ours
  /// is still to be sent, which then takes it down again).
  func markMapped(_ target: WindowID) {
    guard shields[target] != nil, !pendingUnmaps.contains(target) else { return }
    hidden.remove(target)
  }

  /// Destroys a shield put up by `shieldAtOnce` that turned out not to be wanted.
  func dropProvisional(_ target: WindowID) {
    if plain.contains(target) { destroy(target) }
  }

  /// Destroys a shield for good.
  func destroy(_ target: WindowID) {
    guard let s = shields.removeValue(forKey: target) else { return }
    plain.remove(target)
    hidden.remove(target)
    pendingUnmaps.remove(target)
    targetOf[s] = nil
    ownUnmaps[s] = nil
    xcb_destroy_window(x.conn, s)
    var none: [UInt32] = [0]
    xcb_change_window_attributes(x.conn, target, XCB_CW_EVENT_MASK.rawValue, &none)
    registryDirty = true
  }

  /// Removes every shield (open-mode shutdown).
  func removeAll() {
    for t in Array(shields.keys) { destroy(t) }
    writeRegistry()
  }

  /// Forgets a target that was destroyed (its shield died with it).
  func forget(_ target: WindowID) {
    depthOf[target] = nil
    // Every destroyed window passes here: only one that had a shield changes the registry
    // (rewriting it for each would be a request and a root PropertyNotify per window).
    guard let s = shields.removeValue(forKey: target) else { return }
    targetOf[s] = nil
    ownUnmaps[s] = nil
    plain.remove(target)
    hidden.remove(target)
    pendingUnmaps.remove(target)
    registryDirty = true
  }

  /// Publishes the (shield, target) pairs on the root when they changed.
  func writeRegistry() {
    guard registryDirty else { return }
    registryDirty = false
    var pairs: [UInt32] = []
    for (t, s) in shields.sorted(by: { $0.key < $1.key }) { pairs += [s, t] }
    xcb_change_property(
      x.conn, UInt8(XCB_PROP_MODE_REPLACE.rawValue), x.root, atomShields, atomCardinal, 32, UInt32(pairs.count),
      pairs)
  }

  /// Handles one event from the shield connection.
  func handle(_ ev: UnsafeMutablePointer<xcb_generic_event_t>) -> Report? {
    let raw = UnsafeRawPointer(ev)
    switch Int32(CXCB_event_type(ev)) {
    case XCB_EXPOSE:
      let e = raw.load(as: xcb_expose_event_t.self)
      if e.count == 0, let t = targetOf[e.window] { drawLabel(shield: e.window, depth: depthOf[t] ?? x.rootDepth) }
    case XCB_UNMAP_NOTIFY:
      let e = raw.load(as: xcb_unmap_notify_event_t.self)
      if e.event == targetOf[e.window], let mine = ownUnmaps[e.window], let i = mine.firstIndex(of: e.sequence) {
        // Our own unshield (events come in request order: earlier entries are stale).
        ownUnmaps[e.window] = i + 1 < mine.count ? Array(mine[(i + 1)...]) : nil
        return nil
      }
      if let t = targetOf[e.window], e.event == t, !hidden.contains(t) {
        xcb_map_window(x.conn, e.window)  // re-assert at once
        return .lost(t, how: "unmapped by another client")
      }
    case XCB_DESTROY_NOTIFY:
      let e = raw.load(as: xcb_destroy_notify_event_t.self)
      // Only our shield's destruction matters here; the target's own destruction is
      // handled by the watcher's connection (window ids are reused across clients, so
      // a stale DestroyNotify of a target must not touch a newer window's shield).
      if let t = targetOf[e.window], e.event == t {
        targetOf[e.window] = nil
        ownUnmaps[e.window] = nil
        if shields[t] == e.window { shields[t] = nil }
        let wasHidden = hidden.remove(t) != nil
        plain.remove(t)
        pendingUnmaps.remove(t)
        registryDirty = true
        // Destroyed with its parent (no tampering) when the parent is gone too.
        guard let geo = xcb_get_geometry_reply(x.conn, xcb_get_geometry(x.conn, t), nil) else { return nil }
        free(geo)
        return wasHidden ? nil : .lost(t, how: "destroyed by another client")
      }
    case XCB_CREATE_NOTIFY:
      let e = raw.load(as: xcb_create_notify_event_t.self)
      if targetOf[e.window] == nil, shields[e.parent] != nil { raise(e.parent) }
    case XCB_MAP_NOTIFY:
      let e = raw.load(as: xcb_map_notify_event_t.self)
      if targetOf[e.window] == nil, e.event != e.window, shields[e.event] != nil { raise(e.event) }
    case XCB_CONFIGURE_NOTIFY:
      let e = raw.load(as: xcb_configure_notify_event_t.self)
      // A sibling restacked above our shield: put the shield back on top.
      if e.event != e.window, targetOf[e.window] == nil, let s = shields[e.event], e.above_sibling == s {
        raise(e.event)
      }
    case 0:
      break  // X errors on this connection: a target vanished mid-request; expected.
    default:
      break
    }
    return nil
  }

  private func drawLabel(shield s: xcb_window_t, depth: UInt8) {
    guard font != 0, !label.isEmpty else { return }
    if gc == 0 || depth != x.rootDepth {
      // GCs are per depth; shields of other depths get the pattern only.
      guard depth == x.rootDepth else { return }
      gc = x.generateID()
      var v: [UInt32] = [pixel(0xd0d0d0, depth: depth), pixel(0x1c1c1c, depth: depth), font]
      xcb_create_gc(
        x.conn, gc, s, XCB_GC_FOREGROUND.rawValue | XCB_GC_BACKGROUND.rawValue | XCB_GC_FONT.rawValue, &v)
    }
    let bytes = Array(label.unicodeScalars.map { $0.isASCII ? UInt8($0.value) : UInt8(ascii: "?") }.prefix(200))
    xcb_image_text_8(x.conn, UInt8(bytes.count), s, gc, 8, 18, bytes.map { CChar(bitPattern: $0) })
  }
}
