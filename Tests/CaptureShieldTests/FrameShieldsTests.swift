// The frame shields (`FrameShields`) on a recording fake connection: a shielded window's
// window-manager frame is found once and shielded through the driver, its shield goes when no
// shielded window is in it, and a lost frame shield is told apart from a window's.

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

extension RecordingConnection: FrameConnection {}

@Suite struct FrameShieldsTests {
  static let frame: WindowID = 0x50_0001
  static let window: WindowID = 0x40_0001
  static let topLevel: WindowID = 0x60_0001

  /// The fake display: the root, a frame holding a client window, and a bare top-level.
  final class Rig {
    let x = RecordingConnection()
    let frames: FrameShields
    let driver: ShieldDriver
    init() {
      x.windows[x.root] = (24, 0)
      x.windows[FrameShieldsTests.frame] = (24, x.root)
      x.windows[FrameShieldsTests.window] = (24, FrameShieldsTests.frame)
      x.windows[FrameShieldsTests.topLevel] = (24, x.root)
      frames = FrameShields(connection: x)
      driver = ShieldDriver(connection: x, failMode: .open, input: .passthrough, label: "Protected")
      x.reset()
    }
    func sync(_ shielded: Set<WindowID>) {
      frames.sync(engineShielded: shielded, driver: driver, isOwn: { _ in false })
    }
    var creates: [UInt32] {
      x.requests.compactMap { if case .create(_, let parent, _) = $0 { return parent } else { return nil } }
    }
  }

  @Test func aShieldedWindowsFrameIsShieldedOnceAndLetGoWithIt() {
    let r = Rig()
    r.sync([Self.window])
    #expect(r.x.requests.isEmpty)  // nothing due yet: the loop sets `syncDue` after engine events
    r.frames.syncDue = true
    r.sync([Self.window])
    #expect(r.creates == [Self.frame])
    #expect(r.frames.shielded == [Self.frame])
    #expect(r.frames.frame(of: Self.window, isOwn: { _ in false }) == Self.frame)
    #expect(r.driver.table.isUp(Self.frame))
    // Asked again: already up, nothing sent.
    r.x.reset()
    r.frames.syncDue = true
    r.sync([Self.window])
    #expect(r.creates.isEmpty)
    // The window is not shielded any more: the frame's shield goes too.
    r.frames.syncDue = true
    r.sync([])
    #expect(r.frames.shielded.isEmpty)
    #expect(!r.driver.table.isUp(Self.frame))
  }

  @Test func aTopLevelOrOwnFrameGetsNoFrameShield() {
    let r = Rig()
    r.frames.syncDue = true
    r.sync([Self.topLevel])
    #expect(r.frames.frame(of: Self.topLevel, isOwn: { _ in false }) == nil)
    #expect(r.creates.isEmpty)
    let own = FrameShields(connection: r.x)
    #expect(own.frame(of: Self.window, isOwn: { $0 == Self.frame }) == nil)
  }

  @Test func aLostFrameShieldIsToldApartAndNamesTheWindowInside() {
    let r = Rig()
    r.frames.syncDue = true
    r.sync([Self.window])
    #expect(r.frames.isFrameShield(Self.frame, engineShielded: [Self.window]))
    #expect(r.frames.syncDue)
    #expect(r.frames.windows(in: Self.frame, engineShielded: [Self.window]) == [Self.window])
    // A window's own shield, or a frame the engine shields itself, is the engine's.
    #expect(!r.frames.isFrameShield(Self.window, engineShielded: [Self.window]))
    #expect(!r.frames.isFrameShield(Self.frame, engineShielded: [Self.window, Self.frame]))
  }

  @Test func reparentingAndGoneFramesAreAskedAgain() {
    let r = Rig()
    r.frames.syncDue = true
    r.sync([Self.window])
    r.frames.syncDue = false
    // Reparented: asked again, and a sync is due when it is shielded.
    #expect(r.frames.reparented(Self.window, isShielded: true))
    #expect(r.frames.syncDue)
    r.frames.syncDue = false
    #expect(!r.frames.reparented(Self.topLevel, isShielded: false))
    #expect(!r.frames.syncDue)
    // The frame is gone: its shield went with it, and the window inside is asked again.
    _ = r.frames.frame(of: Self.window, isOwn: { _ in false })
    r.frames.gone(Self.frame)
    #expect(r.frames.shielded.isEmpty)
    #expect(r.frames.frameOf[Self.window] == nil)
    #expect(r.frames.syncDue)
  }
}
