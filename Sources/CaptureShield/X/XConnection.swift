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

  /// The first event code of an extension (0 when absent).
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

/// Reads `/proc` for a PID: executable, process name, uid, command line. Plain `readlink`
/// and `read` (no Foundation file APIs): it runs for every client that connects, and the
/// Foundation path cost a third of the daemon's time per client.
enum ProcessInfoReader {
  static func identity(pid: Int?, failure: String? = nil) -> ClientIdentity {
    guard let pid else { return ClientIdentity(failure: failure ?? "no PID (remote or unknown client)") }
    let base = "/proc/\(pid)"
    let status = readSmallFile(base + "/status")
    var id = parse(
      pid: pid, exe: readLink(base + "/exe"), comm: readSmallFile(base + "/comm"),
      status: status, cmdline: readSmallFile(base + "/cmdline", limit: 64 * 1024))
    if id.failure == nil {
      let environ = readSmallFile(base + "/environ", limit: 256 * 1024)
      id.injection = injection(environ: environ, status: status)
      id.loaderPath = environ.flatMap { loaderPath(environ: $0) }
      var st = stat()
      if stat(base + "/exe", &st) == 0 { id.exeRootOwned = st.st_uid == 0 && st.st_mode & 0o022 == 0 }
    }
    if let stat = readSmallFile(base + "/stat"), let ticks = startTicks(stat: stat) {
      var t = timespec()
      clock_gettime(CLOCK_BOOTTIME, &t)
      let boot = Double(t.tv_sec) + Double(t.tv_nsec) / 1e9
      id.processAge = max(0, boot - Double(ticks) / Double(sysconf(Int32(_SC_CLK_TCK))))
    }
    return id
  }

  /// Why a process may run code that is not its program's (`ClientIdentity.injection`):
  /// the dynamic loader's injection variables in its initial environment (`/proc/PID/environ`;
  /// an `LD_LIBRARY_PATH` counts when a directory of it fails `isSafeDirectory`,
  /// nil: unreadable, another user's process), or a tracer (`TracerPid` in
  /// `/proc/PID/status`). Nil when none.
  static func injection(
    environ: [UInt8]?, status: [UInt8]?, isSafeDirectory: (String) -> Bool = rootOnly
  ) -> String? {
    if let status {
      for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("TracerPid:".utf8)) {
        let v = String(decoding: line.dropFirst(10), as: UTF8.self).trimmingCharacters(in: .whitespaces)
        if let tracer = Int(v), tracer != 0 { return "traced by PID \(tracer)" }
        break
      }
    }
    guard let environ else { return "environment unreadable" }
    var libraryPath: String?
    for entry in environ.split(separator: 0) {
      for name in ["LD_PRELOAD=", "LD_AUDIT="] where entry.starts(with: Array(name.utf8)) {
        let value = entry.dropFirst(name.utf8.count)
        if value.contains(where: { $0 != UInt8(ascii: " ") && $0 != UInt8(ascii: ":") }) {
          return String(decoding: entry.prefix(256), as: UTF8.self)
        }
      }
      if entry.starts(with: Array("LD_LIBRARY_PATH=".utf8)) {
        libraryPath = String(decoding: entry.dropFirst(16), as: UTF8.self)
      }
    }
    // A library path others can write: the loader would take libxcb from there.
    return libraryPath.flatMap { unsafeLoaderDirectory($0, isSafe: isSafeDirectory) }
      .map { "LD_LIBRARY_PATH names \($0)" }
  }

  /// Whether the process is stopped (state `T` or `t` in `/proc/PID/stat`: SIGSTOP, a
  /// debugger).
  static func isStopped(pid: Int) -> Bool {
    guard let stat = readSmallFile("/proc/\(pid)/stat") else { return false }
    return processState(stat: stat).map { $0 == UInt8(ascii: "T") || $0 == UInt8(ascii: "t") } ?? false
  }

  /// The parent's PID: field 4 of `/proc/PID/stat` (after the parenthesised command name).
  static func parentPID(stat: [UInt8]) -> Int? {
    guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
    guard fields.count > 1 else { return nil }
    return Int(String(decoding: fields[1], as: UTF8.self))
  }

  /// Who started the process `pid`: its ancestors (PPid chain) up to PID 1, each with its
  /// program, user and `standing(pid)` (how this display sees it). At most 64 steps.
  static func origin(pid: Int, standing: (Int) -> CompositorOrigin.Standing) -> CompositorOrigin {
    var ancestors: [CompositorOrigin.Ancestor] = []
    var current = pid
    for _ in 0..<64 {
      guard let bytes = readSmallFile("/proc/\(current)/stat"), let parent = parentPID(stat: bytes) else {
        return CompositorOrigin(pid: pid, ancestors: ancestors, complete: false)
      }
      if parent <= 1 { return CompositorOrigin(pid: pid, ancestors: ancestors, complete: true) }
      let base = "/proc/\(parent)"
      let id = parse(
        pid: parent, exe: readLink(base + "/exe"), comm: nil, status: readSmallFile(base + "/status"), cmdline: nil)
      var st = stat()
      let rootOwned = stat(base + "/exe", &st) == 0 ? st.st_uid == 0 && st.st_mode & 0o022 == 0 : nil
      ancestors.append(
        CompositorOrigin.Ancestor(
          pid: parent, exe: id.exe, uid: id.uid, exeRootOwned: rootOwned, standing: standing(parent)))
      current = parent
    }
    return CompositorOrigin(pid: pid, ancestors: ancestors, complete: false)
  }

  /// Field 3 of `/proc/PID/stat` (after the parenthesised command name).
  static func processState(stat: [UInt8]) -> UInt8? {
    guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    return stat[(close + 1)...].split(separator: UInt8(ascii: " ")).first?.first
  }

  /// The process's start time, in clock ticks after boot: field 22 of `/proc/PID/stat`
  /// (counted after the command name, which is in parentheses and may hold spaces).
  static func startTicks(stat: [UInt8]) -> UInt64? {
    guard let close = stat.lastIndex(of: UInt8(ascii: ")")) else { return nil }
    let fields = stat[(close + 1)...].split(separator: UInt8(ascii: " "))
    guard fields.count > 19 else { return nil }
    return UInt64(String(decoding: fields[19], as: UTF8.self))
  }

  /// Builds the identity from the raw contents of `/proc/PID/{exe,comm,status,cmdline}`
  /// (nil: could not be read).
  static func parse(pid: Int, exe: String?, comm: [UInt8]?, status: [UInt8]?, cmdline: [UInt8]?) -> ClientIdentity {
    var id = ClientIdentity(pid: pid)
    id.exe = exe
    if let comm {
      // The kernel ends it with one newline (Foundation's trimming was a tenth of the lookup).
      var end = comm.count
      while end > 0, comm[end - 1] == UInt8(ascii: "\n") || comm[end - 1] == UInt8(ascii: "\r") { end -= 1 }
      id.comm = String(decoding: comm[..<end], as: UTF8.self)
    }
    if let status {
      // "Uid:\t<real>\t<effective>\t<saved>\t<fs>"
      for line in status.split(separator: UInt8(ascii: "\n")) where line.starts(with: Array("Uid:".utf8)) {
        let fields = line.dropFirst(4).split(whereSeparator: { $0 == UInt8(ascii: "\t") || $0 == UInt8(ascii: " ") })
        id.uid = fields.first.flatMap { Int(String(decoding: $0, as: UTF8.self)) }
        break
      }
    }
    if let cmdline {
      id.cmdline = cmdline.split(separator: 0).prefix(64).map { String(decoding: $0.prefix(1024), as: UTF8.self) }
    }
    if id.exe == nil && id.comm == nil { id.failure = "process \(pid) exited before it could be identified" }
    return id
  }

  static func readLink(_ path: String) -> String? {
    var buf = [CChar](repeating: 0, count: 4096)
    let n = readlink(path, &buf, buf.count - 1)
    guard n > 0 else { return nil }
    return String(decoding: buf[0..<n].map { UInt8(bitPattern: $0) }, as: UTF8.self)
  }

  /// The whole file, up to `limit` bytes (/proc files report size 0: read until EOF).
  static func readSmallFile(_ path: String, limit: Int = 16 * 1024) -> [UInt8]? {
    let fd = open(path, O_RDONLY | O_CLOEXEC)
    guard fd >= 0 else { return nil }
    defer { close(fd) }
    var out: [UInt8] = []
    var chunk = [UInt8](repeating: 0, count: 4096)
    while out.count < limit {
      let n = chunk.withUnsafeMutableBytes { read(fd, $0.baseAddress, min($0.count, limit - out.count)) }
      if n < 0 { return out.isEmpty ? nil : out }
      if n == 0 { break }
      out += chunk[0..<n]
    }
    return out
  }
}
