// One writer to X: every state-changing request the daemon sends goes through X/Effects/.
// This test reads the library's sources and fails when such an xcb_* call appears
// anywhere else (docs/architecture.md, "X writers").

import Foundation
import Testing

/// The library's sources (this file is Tests/CaptureShieldTests/SingleWriterTests.swift).
private let librarySources = URL(fileURLWithPath: #filePath).deletingLastPathComponent()
  .deletingLastPathComponent().deletingLastPathComponent().appendingPathComponent("Sources/CaptureShield")

enum SingleWriter {
  /// The xcb requests that change what the server or other clients see: windows, their
  /// attributes and stacking, properties, selections, events sent to others, grabs,
  /// SHAPE, XFIXES selection input, Composite redirection, close-down mode, and the
  /// drawing resources of our own windows.
  static let stateChanging = [
    "create_window", "destroy_window", "destroy_subwindows", "map_window", "map_subwindows", "unmap_window",
    "unmap_subwindows", "configure_window", "circulate_window", "change_window_attributes", "reparent_window",
    "change_property", "delete_property", "rotate_properties", "set_selection_owner", "convert_selection",
    "send_event", "kill_client", "set_close_down_mode", "grab_server", "ungrab_server", "grab_pointer",
    "ungrab_pointer", "grab_keyboard", "grab_button", "grab_key", "set_input_focus", "warp_pointer",
    "shape_rectangles", "shape_mask", "shape_combine", "shape_offset", "xfixes_select_selection_input",
    "composite_redirect_window", "composite_redirect_subwindows", "clear_area", "create_pixmap", "create_gc",
    "change_gc", "free_gc", "poly_fill_rectangle", "image_text_8", "open_font", "create_glyph_cursor",
    "allow_events",
  ]

  /// Files outside Effects/ allowed to send some of them, and why.
  static let allowed: [String: (calls: Set<String>, why: String)] = [
    // The quarantine fast path: the RECORD thread maps the shields the engine armed, the
    // moment it reads a new client's ClientStarted (one MapWindow, documented there).
    "Record/RecordPump.swift": (["map_window"], "the RECORD thread's early map"),
    // The CLI's one-shot commands: `shieldctl tag/untag` (the tag), `--pick` (a pointer
    // grab and cursor), commands to the daemon (SendEvent). The daemon never runs them.
    "Control/XControl.swift": (
      [
        "change_property", "delete_property", "send_event", "open_font", "create_glyph_cursor", "grab_pointer",
        "ungrab_pointer", "allow_events",
      ], "the CLI's one-shot commands"
    ),
    // `shieldctl test-window`: a demo app window of its own.
    "Control/TestWindow.swift": (
      ["create_window", "change_property", "map_window", "create_gc", "poly_fill_rectangle"],
      "the CLI's test window (an app, not the daemon)"
    ),
  ]

  /// The state-changing calls in `source` (comments removed), by request name.
  static func calls(in source: String) -> [String] {
    var out: [String] = []
    for line in source.split(separator: "\n", omittingEmptySubsequences: false) {
      var code = Substring(line)
      if let r = code.range(of: "//") { code = code[..<r.lowerBound] }
      var rest = code[...]
      while let r = rest.range(of: "xcb_") {
        let after = rest[r.upperBound...]
        let name = after.prefix { $0.isLetter || $0.isNumber || $0 == "_" }
        var base = String(name)
        if base.hasSuffix("_checked") { base.removeLast("_checked".count) }
        let next = after.dropFirst(name.count).first
        if next == "(", stateChanging.contains(base) { out.append(base) }
        rest = after.dropFirst(name.count)
      }
    }
    return out
  }
}

@Suite("One writer to X")
struct SingleWriterTests {
  @Test func theScannerFindsCallsAndSkipsComments() {
    let src = """
      xcb_map_window(c, w)  // xcb_unmap_window(c, w)
      let ck = xcb_change_property_checked(x.conn, 0, w, a, 6, 32, 1, &v)
      _ = xcb_get_property(c, 0, w, a, 0, 0, 1)
      // xcb_destroy_window(c, w)
      """
    #expect(SingleWriter.calls(in: src) == ["map_window", "change_property"])
  }

  @Test func stateChangingRequestsAreSentOnlyFromEffects() throws {
    let fm = FileManager.default
    let files = try #require(fm.enumerator(atPath: librarySources.path)).compactMap { $0 as? String }
      .filter { $0.hasSuffix(".swift") }.sorted()
    #expect(files.contains("X/Effects/XRequests.swift"))
    var offenders: [String] = []
    var seenAllowed: Set<String> = []
    for f in files where !f.hasPrefix("X/Effects/") {
      let calls = SingleWriter.calls(
        in: try String(contentsOf: librarySources.appendingPathComponent(f), encoding: .utf8))
      guard !calls.isEmpty else { continue }
      let allowed = SingleWriter.allowed[f]?.calls ?? []
      for c in calls where !allowed.contains(c) { offenders.append("\(f): xcb_\(c)") }
      if SingleWriter.allowed[f] != nil { seenAllowed.insert(f) }
    }
    #expect(offenders.isEmpty, "state-changing requests outside X/Effects/: \(offenders)")
    // The allow-list stays short and true: each entry still needs its exception.
    #expect(seenAllowed == Set(SingleWriter.allowed.keys))
  }

  @Test func theRecordThreadMapsOnlyOnce() throws {
    let src = try String(contentsOf: librarySources.appendingPathComponent("Record/RecordPump.swift"), encoding: .utf8)
    #expect(SingleWriter.calls(in: src) == ["map_window"])
  }
}
