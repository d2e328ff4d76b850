// The standard catalog: every capture request on Debian's Xvfb (and Xorg's DRI2/DRI3).
// Offsets follow the conventions in CaptureCatalog.swift.

extension CaptureCatalog {
  /// Every request on Debian's Xvfb (and Xorg's DRI2/DRI3) by which a client can obtain
  /// pixels of a drawable it does not own, plus the indicators. `docs/capture-requests.md`
  /// is the human version of this list; keep them together.
  public static let standard = CaptureCatalog(entries: [
    // MARK: Core protocol
    .init(
      .core(73), "GetImage", kind: "GetImage", role: .readsPixels, targets: [.field(offset: 4, name: "drawable")],
      readsOwnWindows: true,
      reason: "returns the drawable's pixels in the reply (xwd, import, most toolkits' screenshot code)"),
    .init(
      .core(62), "CopyArea", kind: "CopyArea", role: .readsPixels, targets: [.field(offset: 4, name: "src-drawable")],
      frequent: true, readsOwnWindows: true, destination: .field(offset: 8, name: "dst-drawable"),
      reason:
        "copies pixels of the source drawable into one the client can read back (own pixmap, or a window of a helper)"),
    .init(
      .core(63), "CopyPlane", kind: "CopyPlane", role: .readsPixels, targets: [.field(offset: 4, name: "src-drawable")],
      readsOwnWindows: true, destination: .field(offset: 8, name: "dst-drawable"),
      reason: "copies one bit plane of the source drawable: repeated 24 times it is a full copy"),
    .init(
      .core(55), "CreateGC", kind: "CreateGC", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 12, bit: 10, label: "tile"),
        .valueListItem(maskOffset: 12, bit: 11, label: "stipple"),
        .valueListItem(maskOffset: 12, bit: 19, label: "clip-mask"),
      ],
      reason: "a foreign pixmap as tile/stipple/clip mask: any fill into an own drawable then copies its pixels"),
    .init(
      .core(56), "ChangeGC", kind: "ChangeGC", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 8, bit: 10, label: "tile"), .valueListItem(maskOffset: 8, bit: 11, label: "stipple"),
        .valueListItem(maskOffset: 8, bit: 19, label: "clip-mask"),
      ],
      frequent: true, reason: "as CreateGC"),
    .init(
      .core(1), "CreateWindow", kind: "CreateWindow", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 28, bit: 0, label: "background-pixmap"),
        .valueListItem(maskOffset: 28, bit: 2, label: "border-pixmap"),
      ],
      reason: "an own window tiled with a foreign pixmap shows its pixels; GetImage on the own window reads them"),
    .init(
      .core(2), "ChangeWindowAttributes", kind: "ChangeWindowAttributes", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 8, bit: 0, label: "background-pixmap"),
        .valueListItem(maskOffset: 8, bit: 2, label: "border-pixmap"),
      ],
      reason: "as CreateWindow"),
    .init(
      .core(93), "CreateCursor", kind: "CreateCursor", role: .readsPixels,
      targets: [.field(offset: 8, name: "source"), .field(offset: 12, name: "mask", label: "mask")],
      reason: "a cursor made from a foreign (depth-1) pixmap; XFIXES GetCursorImage reads it back"),
    .init(
      .core(7), "ReparentWindow", kind: "ReparentWindow", role: .indicator, startsSession: true,
      targets: [.field(offset: 4, name: "window")], secureTargetsOnly: true, ownWindowAt: 8,
      reason:
        "puts a secure window inside a window of the client's: GetImage on that parent reads it (no shield is up under `shield.when: capturing`)"
    ),
    .init(
      .core(36), "GrabServer", kind: "GrabServer", role: .indicator,
      reason: "freezes every other client, the watcher included, while the tool captures (import, scrot)"),

    // MARK: MIT-SHM
    .init(
      .extension("MIT-SHM", minor: 4), "GetImage", kind: "MIT-SHM ShmGetImage", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")], readsOwnWindows: true,
      reason: "writes the drawable's pixels into shared memory (ffmpeg x11grab, scrot, OBS, WebRTC)"),
    .init(
      .extension("MIT-SHM", minor: 1), "Attach", kind: "MIT-SHM Attach", role: .indicator,
      reason: "attaches a shared-memory segment; ffmpeg attaches a new one every frame"),
    .init(
      .extension("MIT-SHM", minor: 6), "AttachFd", kind: "MIT-SHM AttachFd", role: .indicator,
      reason: "attaches a shared-memory segment passed as a file descriptor"),
    .init(
      .extension("MIT-SHM", minor: 7), "CreateSegment", kind: "MIT-SHM CreateSegment", role: .indicator,
      reason: "has the server create a shared-memory segment (scrot, via xcb)"),

    // MARK: Composite
    .init(
      .extension("Composite", minor: 2), "RedirectSubwindows", kind: "Composite RedirectSubwindows(Manual)",
      role: .indicator, startsSession: true, targets: [.field(offset: 4, name: "window")],
      condition: .init(offset: 8, value: 1), canBypassShield: true,
      reason: "takes over painting of the window's children: on a secure window it hides the child shield"),
    .init(
      .extension("Composite", minor: 1), "RedirectWindow", kind: "Composite RedirectWindow(Manual)",
      role: .indicator, startsSession: true, targets: [.field(offset: 4, name: "window")],
      condition: .init(offset: 8, value: 1), canBypassShield: true,
      reason: "takes over painting of the window (a compositor); on a shield window it hides the shield"),
    .init(
      .extension("Composite", minor: 2), "RedirectSubwindows", kind: "Composite RedirectSubwindows(Automatic)",
      role: .indicator, targets: [.field(offset: 4, name: "window")], condition: .init(offset: 8, value: 0),
      reason: "keeps the children's contents off-screen, the prerequisite of NameWindowPixmap (maim)"),
    .init(
      .extension("Composite", minor: 1), "RedirectWindow", kind: "Composite RedirectWindow(Automatic)",
      role: .indicator, targets: [.field(offset: 4, name: "window")], condition: .init(offset: 8, value: 0),
      reason: "as RedirectSubwindows(Automatic), for one window (OBS window capture)"),
    .init(
      .extension("Composite", minor: 6), "NameWindowPixmap", kind: "Composite NameWindowPixmap", role: .readsPixels,
      targets: [.field(offset: 4, name: "window")], readsOwnWindows: true,
      destination: .field(offset: 8, name: "pixmap"), namesPixmapAt: 8,
      reason:
        "names the redirected window's off-screen pixmap: an own pixmap holding the window's pixels (an own window's: what the screen showed beneath it when it was redirected)"
    ),
    .init(
      .extension("Composite", minor: 7), "GetOverlayWindow", kind: "Composite GetOverlayWindow", role: .indicator,
      targets: [.field(offset: 4, name: "window")], reason: "a compositor taking over the screen"),

    // MARK: RENDER
    .init(
      .extension("RENDER", minor: 4), "CreatePicture", kind: "RENDER CreatePicture", role: .readsPixels,
      targets: [
        .field(offset: 8, name: "drawable"), .valueListItem(maskOffset: 16, bit: 1, label: "alpha-map"),
        .valueListItem(maskOffset: 16, bit: 6, label: "clip-mask"),
      ],
      reason: "a Picture on a foreign drawable: the capture event itself; Composite from it copies the pixels (maim)"),
    .init(
      .extension("RENDER", minor: 5), "ChangePicture", kind: "RENDER ChangePicture", role: .readsPixels,
      targets: [
        .valueListItem(maskOffset: 8, bit: 1, label: "alpha-map"),
        .valueListItem(maskOffset: 8, bit: 6, label: "clip-mask"),
      ],
      reason: "a foreign picture as alpha map or a foreign pixmap as clip mask leaks its pixels into composites"),
    .init(
      .extension("RENDER", minor: 8), "Composite", kind: "RENDER Composite", role: .readsPixels,
      targets: [.field(offset: 8, name: "src"), .field(offset: 12, name: "mask", label: "mask")], frequent: true,
      reason: "composites from another client's Picture (e.g. a compositor's window pictures)"),
    .init(
      .extension("RENDER", minor: 10), "Trapezoids", kind: "RENDER Trapezoids", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 11), "Triangles", kind: "RENDER Triangles", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 12), "TriStrip", kind: "RENDER TriStrip", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 13), "TriFan", kind: "RENDER TriFan", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 23), "CompositeGlyphs8", kind: "RENDER CompositeGlyphs8", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 24), "CompositeGlyphs16", kind: "RENDER CompositeGlyphs16", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 25), "CompositeGlyphs32", kind: "RENDER CompositeGlyphs32", role: .readsPixels,
      targets: [.field(offset: 8, name: "src")], frequent: true, reason: "as Composite, source picture"),
    .init(
      .extension("RENDER", minor: 27), "CreateCursor", kind: "RENDER CreateCursor", role: .readsPixels,
      targets: [.field(offset: 8, name: "source")],
      reason: "a cursor from a foreign picture; XFIXES GetCursorImage reads its ARGB pixels back"),

    // MARK: DAMAGE
    .init(
      .extension("DAMAGE", minor: 1), "Create", kind: "DAMAGE Create", role: .indicator,
      targets: [.field(offset: 8, name: "drawable")],
      reason: "watches where a foreign drawable changes (screen recorders, VNC servers, compositors)"),

    // MARK: XFIXES
    .init(
      .extension("XFIXES", minor: 4), "GetCursorImage", kind: "XFIXES GetCursorImage", role: .indicator,
      reason: "reads the cursor's pixels to draw it into a recording (ffmpeg every frame)"),
    .init(
      .extension("XFIXES", minor: 25), "GetCursorImageAndName", kind: "XFIXES GetCursorImageAndName",
      role: .indicator, reason: "as GetCursorImage"),
    .init(
      .extension("XFIXES", minor: 6), "CreateRegionFromBitmap", kind: "XFIXES CreateRegionFromBitmap",
      role: .readsPixels, targets: [.field(offset: 8, name: "bitmap")],
      reason: "turns a foreign depth-1 pixmap into a region the client can fetch"),

    // MARK: SHAPE
    .init(
      .extension("SHAPE", minor: 2), "Mask", kind: "SHAPE Mask", role: .readsPixels,
      targets: [.field(offset: 16, name: "source_bitmap")],
      reason: "shapes an own window with a foreign depth-1 pixmap; GetRectangles reads it back"),

    // MARK: DOUBLE-BUFFER
    .init(
      .extension("DOUBLE-BUFFER", minor: 1), "AllocateBackBuffer", kind: "DOUBLE-BUFFER AllocateBackBuffer",
      role: .readsPixels, targets: [.field(offset: 4, name: "window")],
      reason:
        "names the window's back buffer (shared by all clients, not covered by a child shield); GetImage on the own name reads it"
    ),

    // MARK: GLX
    .init(
      .extension("GLX", minor: 5), "MakeCurrent", kind: "GLX MakeCurrent", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")],
      reason: "binds a GL context to a foreign window (GLX 1.2 takes X windows); glReadPixels then reads it"),
    .init(
      .extension("GLX", minor: 26), "MakeContextCurrent", kind: "GLX MakeContextCurrent", role: .readsPixels,
      targets: [.field(offset: 8, name: "drawable"), .field(offset: 12, name: "read_drawable", label: "read")],
      reason: "as MakeCurrent"),
    .init(
      .extension("GLX", minor: 13), "CreateGLXPixmap", kind: "GLX CreateGLXPixmap", role: .readsPixels,
      targets: [.field(offset: 12, name: "pixmap")],
      reason: "a GLX drawable on a foreign pixmap (texture from pixmap, OBS)"),
    .init(
      .extension("GLX", minor: 22), "CreatePixmap", kind: "GLX CreatePixmap", role: .readsPixels,
      targets: [.field(offset: 12, name: "pixmap")], reason: "as CreateGLXPixmap"),
    .init(
      .extension("GLX", minor: 31), "CreateWindow", kind: "GLX CreateWindow", role: .readsPixels,
      targets: [.field(offset: 12, name: "window")], reason: "a GLX drawable on a foreign window; glReadPixels reads it"
    ),

    // MARK: DRI2 / DRI3 (not in Xvfb; Xorg with a GPU driver)
    .init(
      .extension("DRI2", minor: 5), "GetBuffers", kind: "DRI2 GetBuffers", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")], reason: "hands out the drawable's GPU buffers"),
    .init(
      .extension("DRI2", minor: 7), "GetBuffersWithFormat", kind: "DRI2 GetBuffersWithFormat", role: .readsPixels,
      targets: [.field(offset: 4, name: "drawable")], reason: "as GetBuffers"),
    .init(
      .extension("DRI3", minor: 3), "BufferFromPixmap", kind: "DRI3 BufferFromPixmap", role: .readsPixels,
      targets: [.field(offset: 4, name: "pixmap")], reason: "exports a foreign pixmap as a dma-buf the client maps"),
    .init(
      .extension("DRI3", minor: 8), "BuffersFromPixmap", kind: "DRI3 BuffersFromPixmap", role: .readsPixels,
      targets: [.field(offset: 4, name: "pixmap")], reason: "as BufferFromPixmap"),

    // MARK: RECORD
    .init(
      .extension("RECORD", minor: 1), "CreateContext", kind: "RECORD CreateContext", role: .indicator,
      reason: "records other clients' protocol: their PutImage uploads and GetImage replies carry pixels"),
    .init(
      .extension("RECORD", minor: 2), "RegisterClients", kind: "RECORD RegisterClients", role: .indicator,
      reason: "as CreateContext"),
  ])
}
