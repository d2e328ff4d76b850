// Which recorded requests reach the engine as capture requests: the filter the shell applies
// to RECORD's requests before `Event.captureRequest` (the facts it needs come from the shell).

extension Engine {
  /// Whether a recorded request of `client` is a capture request the shell hands on
  /// (`Event.captureRequest`). Not: a request that matters only on a secure target
  /// (`ResolvedCaptureCatalog.secureTargetsOnlyKinds`: reparenting) made by the window
  /// manager, which reparents the windows it manages; a request that can only read a
  /// pixmap (a tile, a stipple, ...; recorded while the policy allows some client or a
  /// trusted compositor runs) whose pixmap is not such a client's (`pixmapOwner`, the
  /// target's resource base): anyone else's pixmap holds only what its owner read (itself
  /// a recorded capture) or drew. `isWindowManager` (a round trip) is asked only for the
  /// requests it decides.
  public func countsAsCapture(
    _ req: CaptureRequest, catalog: ResolvedCaptureCatalog, pixmapOwner: ClientID?, isWindowManager: () -> Bool
  ) -> Bool {
    if catalog.secureTargetsOnlyKinds.contains(req.kind), isWindowManager() { return false }
    if CaptureCatalog.standard.readsOnlyPixmaps(kind: req.kind), let owner = pixmapOwner {
      return clients[owner]?.clientClass == .allowed || isTrustedCompositor(owner)
    }
    return true
  }
}
