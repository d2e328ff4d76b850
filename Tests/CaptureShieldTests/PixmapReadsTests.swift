import Testing

@testable import CaptureShield

// Which requests can only read a pixmap, and when the daemon records them (an
// allowed compositor's named pixmaps used as another client's tile).

struct PixmapKindCase: Sendable, CustomTestStringConvertible {
  var kind: String
  var pixmapOnly: Bool
  var testDescription: String { kind }
}

private let pixmapKindCases: [PixmapKindCase] = [
  PixmapKindCase(kind: "CreateGC(tile)", pixmapOnly: true),
  PixmapKindCase(kind: "ChangeGC(stipple)", pixmapOnly: true),
  PixmapKindCase(kind: "CreateWindow(background-pixmap)", pixmapOnly: true),
  PixmapKindCase(kind: "ChangeWindowAttributes(border-pixmap)", pixmapOnly: true),
  PixmapKindCase(kind: "CreateCursor", pixmapOnly: true),
  PixmapKindCase(kind: "GetImage", pixmapOnly: false),
  PixmapKindCase(kind: "CopyArea", pixmapOnly: false),
  PixmapKindCase(kind: "MIT-SHM ShmGetImage", pixmapOnly: false),
  PixmapKindCase(kind: "Composite NameWindowPixmap", pixmapOnly: false),
  PixmapKindCase(kind: "no such request", pixmapOnly: false),
]

@Test(arguments: pixmapKindCases)
func pixmapOnlyKinds(_ c: PixmapKindCase) {
  #expect(CaptureCatalog.standard.readsOnlyPixmaps(kind: c.kind) == c.pixmapOnly)
}

@Test func pixmapReadsAreRecordedOnlyWithAllowRulesOrATrustedCompositor() {
  var p = Policy()
  #expect(!WatcherLoop.recordsPixmapReads(p, trustedCompositor: false))
  #expect(WatcherLoop.recordsPixmapReads(p, trustedCompositor: true))
  let without = WatcherLoop.recordedCatalog(serverEnforced: false, pixmapReads: false)
  #expect(!without.entries.contains { $0.readsOnlyPixmaps })
  #expect(without.entries.contains { $0.kind == "GetImage" })
  p.captureAllow = [Matcher(exe: try! Pattern.parse("*/picom"), name: "picom")]
  #expect(WatcherLoop.recordsPixmapReads(p, trustedCompositor: false))
  let with = WatcherLoop.recordedCatalog(serverEnforced: false, pixmapReads: true)
  #expect(with.entries.contains { $0.kind == "CreateGC" })
  #expect(with.entries.filter { !$0.readsOnlyPixmaps } == without.entries)
  // Under server enforcement nothing but connections is recorded, allow rules or not.
  #expect(WatcherLoop.recordedCatalog(serverEnforced: true, pixmapReads: true).entries.isEmpty)
}
