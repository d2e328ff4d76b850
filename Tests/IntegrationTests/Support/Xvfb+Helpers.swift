// Window manager and compositor helpers for the integration tests' private Xvfb servers
// (they need TestWindow, which only the integration tests have).

import ShieldTestSupport

extension XvfbServer {
  /// Starts openbox and waits until it really manages windows. With a window manager,
  /// top-level windows get reparented into frames.
  ///
  /// openbox sets `_NET_SUPPORTING_WM_CHECK` some 30 ms before it is ready, and a MapRequest
  /// sent in between is lost for good (the window never maps). So after the property appears,
  /// a probe window is mapped (again every 250 ms) until openbox maps it, then closed.
  func startWindowManager(timeout: Duration = .seconds(10)) async throws -> BackgroundProcess {
    let deadline = ContinuousClock.now + timeout
    let process = try startBackground("openbox", ["--sm-disable"])
    let connection = try connect()
    try await waitForHelper("openbox to set _NET_SUPPORTING_WM_CHECK", timeout: timeout, process: process) {
      try connection.windowProperty("_NET_SUPPORTING_WM_CHECK", of: connection.root) != nil
    }
    do {
      try await waitUntilTheWindowManagerMaps(deadline: deadline) { what in
        if !process.isRunning { throw ProcessError.io("openbox exited (\(what))") }
      }
    } catch {
      let result = await process.stop()
      throw ProcessError.io("openbox does not map windows (\(error)): \(result)")
    }
    return process
  }

  /// A window manager sets its properties before it handles MapRequests (openbox some
  /// 30 ms before, mutter and kwin longer), and a MapRequest sent in between is lost for
  /// good: a probe window is mapped (again every 250 ms) until the window manager maps it,
  /// then closed. `check` runs after each try (it throws when the window manager is gone);
  /// past `deadline` this throws.
  func waitUntilTheWindowManagerMaps(
    deadline: ContinuousClock.Instant, check: (String) throws -> Void
  ) async throws {
    let probe = try await TestWindow.open(
      on: self, rect: PixelRect(x: 0, y: 0, width: 8, height: 8), color: .black,
      title: "CaptureShield window-manager probe", instance: "captureshield-wm-probe",
      className: "CaptureShieldProbe", map: false)
    while true {
      do {
        try await probe.map(timeout: .milliseconds(250))
        break
      } catch TestWindowError.timedOut(let what) {
        try check(what)
        if ContinuousClock.now >= deadline { throw TestWindowError.timedOut("the window manager maps a probe window") }
      }
    }
    try await probe.closeAndWaitUntilGone()
  }

  /// Starts picom (xrender backend, no fading, no config file) and waits until it owns
  /// `_NET_WM_CM_S0` *and* has redirected the root's subwindows (X-Resource shows a
  /// CompositeClientSubwindows resource for its client). A compositor redirects every
  /// top-level window (Composite, manual) and paints the screen itself, asynchronously: a
  /// change shows on the root some milliseconds later.
  func startCompositor(timeout: Duration = .seconds(10)) async throws -> BackgroundProcess {
    let process = try startBackground(
      "picom", ["--backend", "xrender", "--no-fading-openclose", "--config", "/dev/null"])
    let connection = try connect()
    try await waitForHelper("picom to own _NET_WM_CM_S0 and redirect the screen", timeout: timeout, process: process) {
      let owner = try connection.selectionOwner("_NET_WM_CM_S0")
      return try owner != 0
        && connection.resourceTypes(ofClientOwning: owner)["CompositeClientSubwindows", default: 0] > 0
    }
    return process
  }

  private func waitForHelper(
    _ what: String, timeout: Duration, process: BackgroundProcess, _ condition: () throws -> Bool
  ) async throws {
    let deadline = ContinuousClock.now + timeout
    while try !condition() {
      if !process.isRunning {
        let result = await process.stop()
        throw ProcessError.io("waiting for \(what): the process exited: \(result)")
      }
      if ContinuousClock.now >= deadline {
        let result = await process.stop()
        throw ProcessError.io("timed out after \(timeout) waiting for \(what): \(result)")
      }
      try await Task.sleep(for: .milliseconds(10))
    }
  }
}
