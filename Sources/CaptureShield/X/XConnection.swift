internal import CXCB
import Foundation

/// A property value as fetched from the server.
struct PropertyValue {
  var type: xcb_atom_t
  var format: UInt8
  var bytes: [UInt8]
}

/// One xcb connection and what the shell needs of it: queries. Its state-changing
/// requests are the `XRequests` wrappers in `Effects/`, the one place to audit them.
///
/// Threads: libxcb itself is thread-safe, but this object's caches are not. Each
/// connection is used by the daemon's main loop only, with one exception: the RECORD
/// thread (`RecordPump`) sends `MapWindow` on the shield connection's raw handle, under
/// the pump's lock (see docs/architecture.md, "Threads").
final class XConnection {
  let conn: OpaquePointer
  let screenNumber: Int32
  let root: xcb_window_t
  let rootDepth: UInt8
  let rootVisual: xcb_visualid_t
  let blackPixel: UInt32
  let resourceMask: UInt32
  let displayName: String
  /// How X errors on this connection are reported (see `XErrorPolicy`).
  var errors = XErrorPolicy(log: nil)
  private var atomCache: [String: xcb_atom_t] = [:]

  init(display: String?) throws(XError) {
    let name = display ?? ProcessInfo.processInfo.environment["DISPLAY"] ?? ""
    var screen: Int32 = 0
    guard !name.isEmpty, let c = xcb_connect(name, &screen) else {
      throw .cannotConnect(display: name.isEmpty ? "(DISPLAY is not set)" : name)
    }
    if xcb_connection_has_error(c) != 0 {
      xcb_disconnect(c)
      throw .cannotConnect(display: name)
    }
    conn = c
    displayName = name
    screenNumber = screen
    let setup = xcb_get_setup(c)!
    resourceMask = setup.pointee.resource_id_mask
    var it = xcb_setup_roots_iterator(setup)
    for _ in 0..<screen { xcb_screen_next(&it) }
    let s = it.data.pointee
    root = s.root
    rootDepth = s.root_depth
    rootVisual = s.root_visual
    blackPixel = s.black_pixel
  }

  deinit { xcb_disconnect(conn) }

  var fileDescriptor: Int32 { xcb_get_file_descriptor(conn) }
  var hasError: Bool { xcb_connection_has_error(conn) != 0 }
  func flush() { _ = xcb_flush(conn) }
  func generateID() -> UInt32 { xcb_generate_id(conn) }

  /// The resource-id base of the client that created `xid`.
  func clientBase(of xid: UInt32) -> UInt32 { xid & ~resourceMask }

  /// Our own resource-id base (windows we create carry it).
  lazy var ownBase: UInt32 = clientBase(of: generateID())

  /// Interns atoms, pipelined, cached.
  func atoms(_ names: [String]) -> [xcb_atom_t] {
    let missing = names.filter { atomCache[$0] == nil }
    let cookies = missing.map { n in
      n.withCString { xcb_intern_atom(conn, 0, UInt16(strlen($0)), $0) }
    }
    for (n, ck) in zip(missing, cookies) {
      if let r = xcb_intern_atom_reply(conn, ck, nil) {
        atomCache[n] = r.pointee.atom
        free(r)
      } else {
        atomCache[n] = 0
      }
    }
    return names.map { atomCache[$0]! }
  }

  func atom(_ name: String) -> xcb_atom_t { atoms([name])[0] }

  /// Fetches a property, any type, up to `maxBytes`; nil when the window is gone.
  func property(_ window: xcb_window_t, _ atom: xcb_atom_t, maxBytes: UInt32 = 65536) -> PropertyValue? {
    let ck = xcb_get_property(conn, 0, window, atom, 0 /* AnyPropertyType */, 0, (maxBytes + 3) / 4)
    return propertyReply(ck)
  }

  func propertyCookie(_ window: xcb_window_t, _ atom: xcb_atom_t, maxBytes: UInt32 = 65536)
    -> xcb_get_property_cookie_t
  {
    xcb_get_property(conn, 0, window, atom, 0, 0, (maxBytes + 3) / 4)
  }

  func propertyReply(_ ck: xcb_get_property_cookie_t) -> PropertyValue? {
    var err: UnsafeMutablePointer<xcb_generic_error_t>? = nil
    guard let r = xcb_get_property_reply(conn, ck, &err) else {
      free(err)
      return nil
    }
    defer { free(r) }
    let len = Int(xcb_get_property_value_length(r))
    var bytes = [UInt8](repeating: 0, count: len)
    if len > 0, let p = xcb_get_property_value(r) {
      bytes.withUnsafeMutableBytes { $0.copyMemory(from: UnsafeRawBufferPointer(start: p, count: len)) }
    }
    return PropertyValue(type: r.pointee.type, format: r.pointee.format, bytes: bytes)
  }

  /// Children of `window`, bottom to top, and its parent; nil when gone.
  func queryTree(_ window: xcb_window_t) -> (parent: xcb_window_t, children: [xcb_window_t])? {
    guard let r = xcb_query_tree_reply(conn, xcb_query_tree(conn, window), nil) else { return nil }
    defer { free(r) }
    let n = Int(xcb_query_tree_children_length(r))
    let p = xcb_query_tree_children(r)!
    return (r.pointee.parent, (0..<n).map { p[$0] })
  }

  /// Whether the window exists and is mapped (viewable or not).
  func attributes(_ window: xcb_window_t) -> (mapState: UInt8, overrideRedirect: Bool, inputOnly: Bool)? {
    guard let r = xcb_get_window_attributes_reply(conn, xcb_get_window_attributes(conn, window), nil) else {
      return nil
    }
    defer { free(r) }
    return (
      r.pointee.map_state, r.pointee.override_redirect != 0,
      r.pointee._class == UInt16(XCB_WINDOW_CLASS_INPUT_ONLY.rawValue)
    )
  }

  /// Current owner window of a selection (0 when none).
  func selectionOwner(_ selection: xcb_atom_t) -> xcb_window_t {
    guard let r = xcb_get_selection_owner_reply(conn, xcb_get_selection_owner(conn, selection), nil) else { return 0 }
    defer { free(r) }
    return r.pointee.owner
  }

  /// The extension's major opcode and first event code; nil when the server lacks it.
  func queryExtension(_ name: String) -> (majorOpcode: UInt8, firstEvent: UInt8)? {
    let ck = name.withCString { xcb_query_extension(conn, UInt16(strlen($0)), $0) }
    guard let r = xcb_query_extension_reply(conn, ck, nil) else { return nil }
    defer { free(r) }
    return r.pointee.present != 0 ? (r.pointee.major_opcode, r.pointee.first_event) : nil
  }

  func hasExtension(_ name: String) -> Bool { queryExtension(name) != nil }

  /// The PID of the client owning `xid`, through X-Resource (does not trust the app).
  func clientPID(of xid: UInt32) -> Int? {
    var spec = xcb_res_client_id_spec_t(client: xid, mask: UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue))
    let ck = xcb_res_query_client_ids(conn, 1, &spec)
    guard let r = xcb_res_query_client_ids_reply(conn, ck, nil) else { return nil }
    defer { free(r) }
    var it = xcb_res_query_client_ids_ids_iterator(r)
    while it.rem > 0 {
      let v = it.data!
      if v.pointee.spec.mask & UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue) != 0,
        xcb_res_client_id_value_value_length(v) >= 1, let p = xcb_res_client_id_value_value(v)
      {
        return Int(p.pointee)
      }
      xcb_res_client_id_value_next(&it)
    }
    return nil
  }

  /// The names of the extensions the server has (ListExtensions).
  func listExtensions() -> [String] {
    guard let r = xcb_list_extensions_reply(conn, xcb_list_extensions(conn), nil) else { return [] }
    defer { free(r) }
    var out: [String] = []
    var it = xcb_list_extensions_names_iterator(r)
    while it.rem > 0 {
      let str = it.data!
      let n = Int(xcb_str_name_length(str))
      out.append(
        String(
          decoding: UnsafeBufferPointer(start: xcb_str_name(str), count: n).map { UInt8(bitPattern: $0) }, as: UTF8.self
        ))
      xcb_str_next(&it)
    }
    return out
  }

  /// The extension's major opcode; 0 when the server lacks it.
  func majorOpcode(_ name: String) -> UInt8 { queryExtension(name)?.majorOpcode ?? 0 }

  func firstEvent(_ name: String) -> UInt8 { queryExtension(name)?.firstEvent ?? 0 }

  /// Resource type names a client holds (X-Resource QueryClientResources), e.g.
  /// `CompositeClientSubwindows` for a client that redirects windows.
  func resourceTypeNames(ofClient base: UInt32) -> Set<String> {
    guard let r = xcb_res_query_client_resources_reply(conn, xcb_res_query_client_resources(conn, base), nil) else {
      return []
    }
    defer { free(r) }
    var it = xcb_res_query_client_resources_types_iterator(r)
    var atoms: [xcb_atom_t] = []
    while it.rem > 0 {
      if it.data.pointee.count > 0 { atoms.append(it.data.pointee.resource_type) }
      xcb_res_type_next(&it)
    }
    var names = Set<String>()
    let cookies = atoms.map { xcb_get_atom_name(conn, $0) }
    for ck in cookies {
      guard let n = xcb_get_atom_name_reply(conn, ck, nil) else { continue }
      let len = Int(xcb_get_atom_name_name_length(n))
      let p = xcb_get_atom_name_name(n)!
      names.insert(String(decoding: UnsafeRawBufferPointer(start: p, count: len), as: UTF8.self))
      free(n)
    }
    return names
  }

  /// Every local client's PID, by resource base: one X-Resource QueryClientIds for all
  /// clients (a client without a PID the server knows is left out).
  func clientPIDs() -> [UInt32: Int] {
    var spec = xcb_res_client_id_spec_t(client: 0, mask: UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue))
    guard let r = xcb_res_query_client_ids_reply(conn, xcb_res_query_client_ids(conn, 1, &spec), nil) else {
      return [:]
    }
    defer { free(r) }
    var out: [UInt32: Int] = [:]
    var it = xcb_res_query_client_ids_ids_iterator(r)
    while it.rem > 0 {
      let v = it.data!
      if v.pointee.spec.mask & UInt32(XCB_RES_CLIENT_ID_MASK_LOCAL_CLIENT_PID.rawValue) != 0,
        xcb_res_client_id_value_value_length(v) >= 1, let p = xcb_res_client_id_value_value(v)
      {
        out[clientBase(of: v.pointee.spec.client)] = Int(p.pointee)
      }
      xcb_res_client_id_value_next(&it)
    }
    return out
  }

  /// Every client's resource base, through X-Resource QueryClients.
  func allClientBases() -> [UInt32] {
    guard let r = xcb_res_query_clients_reply(conn, xcb_res_query_clients(conn), nil) else { return [] }
    defer { free(r) }
    var it = xcb_res_query_clients_clients_iterator(r)
    var out: [UInt32] = []
    while it.rem > 0 {
      out.append(it.data.pointee.resource_base)
      xcb_res_client_next(&it)
    }
    return out
  }
}
