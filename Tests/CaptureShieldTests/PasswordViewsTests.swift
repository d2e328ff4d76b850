// Password fields anywhere: the accessibility bus's password text fields as secure views of
// their windows (`PasswordViews`), the engine's decision (`Engine.passwordFieldsShown`) and
// the policy key that turns it off (`accessibility.passwordFields`).

import Testing

@testable import CaptureShieldCore

private func field(_ pid: Int, _ x: Int, _ y: Int, _ w: Int, _ h: Int, focused: Bool = false) -> AccessibleField {
  AccessibleField(pid: pid, area: ScreenRect(x: x, y: y, width: w, height: h), focused: focused)
}

private func frame(_ id: WindowID, _ pid: Int, _ x: Int, _ y: Int, _ w: Int, _ h: Int) -> TopLevelFrame {
  TopLevelFrame(window: id, pid: pid, area: ScreenRect(x: x, y: y, width: w, height: h))
}

@Suite("Password fields (accessibility bus)")
struct PasswordViewsTests {
  struct ViewCase: Sendable, CustomStringConvertible {
    let name: String
    let fields: [AccessibleField]
    let frames: [TopLevelFrame]
    let expected: [WindowID: [String]]
    var description: String { name }
  }

  static let viewCases: [ViewCase] = [
    ViewCase(
      name: "zenity's field (measured: 168x34 at 108,77; window at 0,0)",
      fields: [field(10, 108, 77, 168, 34)], frames: [frame(0x200008, 10, 0, 0, 290, 164)],
      expected: [0x200008: ["168x34+108+77"]]),
    ViewCase(
      name: "desktop coordinates become window coordinates",
      fields: [field(10, 300, 250, 100, 20)], frames: [frame(0x100, 10, 200, 200, 400, 300)],
      expected: [0x100: ["100x20+100+50"]]),
    ViewCase(
      name: "another application's window is never chosen",
      fields: [field(10, 300, 250, 100, 20)], frames: [frame(0x100, 11, 200, 200, 400, 300)], expected: [:]),
    ViewCase(
      name: "a field outside every window of its application is dropped",
      fields: [field(10, 900, 900, 50, 20)], frames: [frame(0x100, 10, 0, 0, 400, 300)], expected: [:]),
    ViewCase(
      name: "clipped to the window",
      fields: [field(10, 380, 290, 50, 20)], frames: [frame(0x100, 10, 0, 0, 400, 300)],
      expected: [0x100: ["20x10+380+290"]]),
    ViewCase(
      name: "the window holding the most of the field wins",
      fields: [field(10, 90, 10, 40, 20)],
      frames: [frame(0x100, 10, 0, 0, 100, 100), frame(0x200, 10, 100, 0, 100, 100)],
      expected: [0x200: ["30x20+0+10"]]),
    ViewCase(
      name: "two fields of one window, sorted by position; duplicates dropped",
      fields: [field(10, 10, 60, 100, 20), field(10, 10, 20, 100, 20), field(10, 10, 20, 100, 20)],
      frames: [frame(0x100, 10, 0, 0, 400, 300)],
      expected: [0x100: ["100x20+10+20", "100x20+10+60"]]),
    ViewCase(
      name: "an empty field is ignored",
      fields: [field(10, 10, 10, 0, 20)], frames: [frame(0x100, 10, 0, 0, 400, 300)], expected: [:]),
  ]

  @Test(arguments: viewCases)
  func views(_ c: ViewCase) {
    let v = PasswordViews.views(fields: c.fields, frames: c.frames)
    #expect(v.mapValues { $0.map(\.description) } == c.expected)
  }

  @Test func propertyIsFourCardinalsPerView() {
    let rects = [ViewRect(x: 108, y: 77, width: 168, height: 34), ViewRect(x: 1, y: 2, width: 3, height: 4)]
    #expect(PasswordViews.propertyValue(rects) == [108, 77, 168, 34, 1, 2, 3, 4])
  }

  // MARK: The engine

  static let window = WindowInfo(id: 0x200008, client: ClientID(0x20_0000), facts: Facts(class: "Zenity", pid: 10))

  static func engine(passwordFields: Bool = true) -> Engine {
    var p = Policy()
    p.passwordFields = passwordFields
    var e = Engine(policy: p)
    _ = e.handle(.windowAppeared(window), now: MonotonicTime(nanoseconds: 1))
    return e
  }

  @Test func aShowingFieldMakesItsWindowSecureWithItsViews() {
    var e = Self.engine()
    #expect(e.windows[Self.window.id]?.reason == SecureReason.none)
    let fx = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34)], frames: [frame(0x200008, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 2))
    #expect(fx.contains(.secureViews(0x200008, [ViewRect(x: 108, y: 77, width: 168, height: 34)])))
    #expect(e.windows[Self.window.id]?.reason == .passwordField)
    #expect(fx.contains { if case .audit(let r) = $0 { r.event == "password-field" } else { false } })
    #expect(fx.contains { if case .audit(let r) = $0 { r.event == "secure-decision" } else { false } })

    // The same fields again: nothing to do.
    let again = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34)], frames: [frame(0x200008, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 3))
    #expect(!again.contains { if case .secureViews = $0 { true } else { false } })

    // The field is hidden: the views go, and the window is not secure any more.
    let gone = e.handle(.accessibleFields([], frames: []), now: MonotonicTime(nanoseconds: 4))
    #expect(gone.contains(.secureViews(0x200008, [])))
    #expect(e.windows[Self.window.id]?.reason == SecureReason.none)
    #expect(e.passwordViews.isEmpty)
  }

  @Test func aFocusedFieldIsFollowed() {
    var e = Self.engine()
    _ = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34, focused: true)], frames: [frame(0x200008, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 2))
    #expect(e.passwordFocus == [0x200008])
    _ = e.handle(.windowGone(0x200008), now: MonotonicTime(nanoseconds: 3))
    #expect(e.passwordFocus.isEmpty && e.passwordViews.isEmpty)
  }

  @Test func aWindowTheEngineDoesNotTrackIsIgnored() {
    var e = Self.engine()
    let fx = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34)], frames: [frame(0x999, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 2))
    #expect(!fx.contains { if case .secureViews = $0 { true } else { false } })
  }

  @Test func offByPolicy() {
    var e = Self.engine(passwordFields: false)
    let fx = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34)], frames: [frame(0x200008, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 2))
    #expect(!fx.contains { if case .secureViews = $0 { true } else { false } })
    #expect(e.windows[Self.window.id]?.reason == SecureReason.none)
  }

  @Test func aReloadThatTurnsItOffDropsTheViews() {
    var e = Self.engine()
    _ = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34)], frames: [frame(0x200008, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 2))
    var p = Policy()
    p.passwordFields = false
    let fx = e.handle(.policyReplaced(p), now: MonotonicTime(nanoseconds: 3))
    #expect(fx.contains(.secureViews(0x200008, [])))
    #expect(e.windows[Self.window.id]?.reason == SecureReason.none)
  }

  @Test func aRuleStillNamesItsOwnReason() {
    var p = Policy()
    p.secure = [Matcher(class: try! Pattern.parse("Zenity"), name: "zenity")]
    var e = Engine(policy: p)
    _ = e.handle(.windowAppeared(Self.window), now: MonotonicTime(nanoseconds: 1))
    _ = e.handle(
      .accessibleFields([field(10, 108, 77, 168, 34)], frames: [frame(0x200008, 10, 0, 0, 290, 164)]),
      now: MonotonicTime(nanoseconds: 2))
    #expect(e.windows[Self.window.id]?.reason != .passwordField)
    #expect(e.passwordViews[0x200008] != nil)
  }

  @Test func underTheModuleEveryWindowIsFollowed() {
    var p = Policy()
    p.builtinSecure = []
    #expect(ServerEnforcement.windowWatch(policy: p, moduleReportsTags: true) == .all)
    p.passwordFields = false
    #expect(ServerEnforcement.windowWatch(policy: p, moduleReportsTags: true) == .tagged)
  }

  // MARK: The policy key

  @Test func policyKey() throws {
    let off = try PolicyParser.parse("{ version: 1, accessibility: { passwordFields: false } }", path: "t.json5")
    #expect(off.accessibility.passwordFields == false)
    #expect(PolicyLoader.merge([off]).passwordFields == false)
    let none = try PolicyParser.parse("{ version: 1 }", path: "t.json5")
    #expect(PolicyLoader.merge([none]).passwordFields == true)
    #expect(PolicyLoader.merge([off, none]).passwordFields == false)
  }

  @Test(arguments: [
    (
      "{ version: 1, accessibility: { passwordField: false } }",
      "t.json5:1:32: error: unknown key 'passwordField' in 'accessibility' (did you mean 'passwordFields'?)"
    ),
    (
      #"{ version: 1, accessibility: { passwordFields: "no" } }"#,
      "t.json5:1:48: error: 'passwordFields' must be a boolean (true or false), not a string"
    ),
    (
      "{ version: 1, accessibility: true }",
      "t.json5:1:30: error: 'accessibility' must be an object, not a boolean"
    ),
  ])
  func policyKeyErrors(_ source: String, _ expected: String) {
    do {
      _ = try PolicyParser.parse(source, path: "t.json5")
      Issue.record("parsed: \(source)")
    } catch {
      #expect(error.diagnostics.map(\.description) == [expected])
    }
  }
}
