// Secure views (PROTOCOL.md section 1): the view properties decoded, merged, and the
// engine's decision (only the rectangles, the whole window when malformed, a tag or a rule
// wins over views). No X.

import Testing

@testable import CaptureShieldCore

private func le(_ items: [UInt32]) -> [UInt8] {
  items.flatMap { v in (0..<4).map { UInt8(truncatingIfNeeded: v >> (8 * $0)) } }
}

@Suite("Secure views")
struct SecureViewsTests {
  @Test("decoding: absent, empty, rectangles, malformed")
  func decoding() {
    #expect(ViewState.decode(isCardinal: false, format: 0, bytes: []) == .none)
    #expect(ViewState.decode(isCardinal: true, format: 32, bytes: []) == .none)
    #expect(
      ViewState.decode(
        isCardinal: true, format: 32, bytes: le([100, 100, 200, 100, UInt32(bitPattern: -5), 0, 10, 20]))
        == .rects([ViewRect(x: 100, y: 100, width: 200, height: 100), ViewRect(x: -5, y: 0, width: 10, height: 20)]))
    // 3 items, another format, another type: the whole window (fail safe)
    #expect(ViewState.decode(isCardinal: true, format: 32, bytes: le([0, 0, 10])) == .malformed)
    #expect(ViewState.decode(isCardinal: true, format: 8, bytes: Array(repeating: 1, count: 16)) == .malformed)
    #expect(ViewState.decode(isCardinal: false, format: 32, bytes: le([0, 0, 10, 10])) == .malformed)
  }

  @Test("the app's and the daemon's views together")
  func merging() {
    let a = ViewState.rects([ViewRect(x: 1, y: 2, width: 3, height: 4)])
    let b = ViewState.rects([ViewRect(x: 5, y: 6, width: 7, height: 8)])
    #expect(a.merged(.none) == a)
    #expect(ViewState.none.merged(b) == b)
    #expect(a.merged(b) == .rects(a.rects + b.rects))
    #expect(a.merged(.malformed) == .malformed)
    var info = WindowInfo(id: 7)
    #expect(info.viewReason == nil)
    info.appViews = a
    info.policyViews = b
    #expect(info.viewReason == .views(a.rects + b.rects, by: "app+daemon"))
    #expect(info.viewReason?.description == "views (app+daemon): 3x4+1+2, 7x8+5+6")
    info.policyViews = .malformed
    #expect(info.viewReason == .malformedViews)
  }

  @Test("the engine: views shield only their rectangles; a tag or a rule shields the whole window")
  func decisions() {
    var p = Policy()
    p.builtinSecure = []
    p.when = .always
    var e = Engine(policy: p)
    let r = [ViewRect(x: 100, y: 100, width: 200, height: 100)]
    var w = WindowInfo(id: 0x40_0001, client: ClientID(0x40_0000))
    w.appViews = .rects(r)
    let fx = e.handle(.windowAppeared(w), now: .seconds(1))
    #expect(e.windows[w.id]?.reason == .views(r, by: "app"))
    #expect(e.shielded.contains(w.id), "\(fx)")
    w.tag = .secure
    _ = e.handle(.windowChanged(w), now: .seconds(2))
    #expect(e.windows[w.id]?.reason == .tag, "a tagged window is secure as a whole")
    w.tag = .absent
    w.appViews = .none
    _ = e.handle(.windowChanged(w), now: .seconds(3))
    #expect(e.windows[w.id]?.reason == SecureReason.none)
    #expect(!e.shielded.contains(w.id), "no views: nothing shielded (control)")
    w.appViews = .malformed
    _ = e.handle(.windowChanged(w), now: .seconds(4))
    #expect(e.windows[w.id]?.reason == .malformedViews)
    #expect(e.shielded.contains(w.id))
  }
}
