// What a capture shows of an app's windows: where their client areas are on top, and how
// many pixels there are the app's content rather than the shield's or the desktop's
// (RealAppTests, BuiltinSecureAppTests).

import CXCB
import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport

/// Colours that are not an app's content: the shield (ShieldDriver: a stripe tile of
/// 0x1c1c1c and 0x2e2e2e, its label 0xd0d0d0 on 0x1c1c1c) and the black root.
let notContent: Set<UInt32> = [0x1c1c1c, 0x2e2e2e, 0xd0d0d0, 0x000000]

/// Where the client areas of `windows` are on top on the screen now: a mask over the
/// root, from the stacking order (a window manager's frame, or another top-level, over a
/// client area takes it out).
func visibleMask(_ server: XvfbServer, windows: Set<UInt32>) throws -> [Bool] {
  let x = try server.connect()
  defer { x.disconnect() }
  let (w, h) = (server.width, server.height)
  var mask = [Bool](repeating: false, count: w * h)
  func children(_ parent: xcb_window_t) throws -> [xcb_window_t] {
    let r = try x.ownedReply("QueryTree") { xcb_query_tree_reply(x.raw, xcb_query_tree(x.raw, parent), $0) }
    defer { free(r) }
    let n = Int(xcb_query_tree_children_length(r))
    return Array(UnsafeBufferPointer(start: xcb_query_tree_children(r), count: n))
  }
  func parent(_ window: xcb_window_t) throws -> xcb_window_t {
    let r = try x.ownedReply("QueryTree") { xcb_query_tree_reply(x.raw, xcb_query_tree(x.raw, window), $0) }
    defer { free(r) }
    return r.pointee.parent
  }
  func paint(_ rect: PixelRect, _ value: Bool) {
    let r = rect.intersection(PixelRect(x: 0, y: 0, width: w, height: h))
    guard r.area > 0 else { return }
    for yy in r.y..<r.maxY { for xx in r.x..<r.maxX { mask[yy * w + xx] = value } }
  }
  // The top-level (child of the root) holding each window.
  var topLevel: [xcb_window_t: [xcb_window_t]] = [:]
  for win in windows {
    var t = win
    while let p = try? parent(t), p != 0, p != x.root { t = p }
    topLevel[t, default: []].append(win)
  }
  for c in try children(x.root) {  // bottom to top
    guard let g = try? x.geometry(of: c), g.isViewable else { continue }
    paint(g.rect.grown(by: g.borderWidth), false)
    for win in topLevel[c] ?? [] {
      if let wg = try? x.geometry(of: win), wg.isViewable { paint(wg.rect, true) }
    }
  }
  return mask
}

extension PixelRect {
  fileprivate func grown(by d: Int) -> PixelRect {
    PixelRect(x: x - d, y: y - d, width: width + 2 * d, height: height + 2 * d)
  }
}

/// Pixels under `mask` that are an app's content (not the shield's, not the desktop's).
func contentPixels(_ image: RGBImage, _ mask: [Bool]) -> Int {
  var n = 0
  for i in 0..<min(mask.count, image.width * image.height) where mask[i] {
    let p = image.pixels
    let rgb = UInt32(p[3 * i]) << 16 | UInt32(p[3 * i + 1]) << 8 | UInt32(p[3 * i + 2])
    if !notContent.contains(rgb) { n += 1 }
  }
  return n
}
