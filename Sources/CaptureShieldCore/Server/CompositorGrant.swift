// Under server enforcement the Xorg module trusts the daemon alone (and what the admin
// lists); the compositor, which must read every window to draw the screen, is granted by
// the daemon per connection after checks. This is the pure decision: which compositor may
// be granted, from facts the shell gathers (`CompositorOrigin`).

/// Who started a compositor: its ancestors, parent first, as the shell found them in
/// `/proc` (PPid chain) and as this display's X server knows them.
public struct CompositorOrigin: Sendable, Hashable, Codable {
  /// The compositor's PID these facts are about.
  public var pid: Int
  /// Parent first, up to (not including) PID 1.
  public var ancestors: [Ancestor]
  /// Whether the walk reached PID 1 (or a process without a parent); false when a process
  /// of the chain could not be read or the chain was too long.
  public var complete: Bool

  /// One process above the compositor.
  public struct Ancestor: Sendable, Hashable, Codable {
    public var pid: Int
    public var exe: String?
    public var uid: Int?
    /// Whether its program file is owned by root and writable by nobody else.
    public var exeRootOwned: Bool?
    /// How this display's X server sees it.
    public var standing: Standing

    public init(pid: Int, exe: String? = nil, uid: Int? = nil, exeRootOwned: Bool? = nil, standing: Standing) {
      self.pid = pid
      self.exe = exe
      self.uid = uid
      self.exeRootOwned = exeRootOwned
      self.standing = standing
    }
  }

  /// An ancestor as a client of this display.
  public enum Standing: String, Sendable, Hashable, Codable {
    /// Not connected to this display.
    case notAClient
    /// Connected, and the module trusts it (the daemon, a program of its `Trust` list) or
    /// the daemon granted it.
    case trusted
    /// Connected, untrusted, and it owns the window manager selection `WM_Sn`.
    case windowManager
    /// Connected and untrusted: an ordinary client (a terminal, an app).
    case untrusted
  }

  public init(pid: Int, ancestors: [Ancestor], complete: Bool) {
    self.pid = pid
    self.ancestors = ancestors
    self.complete = complete
  }

  /// Session managers and session starters, which start the window manager and compositor
  /// of a desktop (by file name; they count only as root-owned programs in a system
  /// directory). Some are X clients themselves (XFCE's, MATE's and GNOME's session
  /// managers; `xinit` keeps the connection it waited for the server with), untrusted by
  /// the module.
  public static let sessionManagers: Set<String> = [
    "xfce4-session", "mate-session", "gnome-session", "gnome-session-binary", "gnome-session-service",
    "cinnamon-session", "cinnamon-session-binary", "ksmserver", "startplasma-x11", "plasma_session", "lxsession",
    "lxqt-session", "budgie-desktop", "xinit", "gdm-x-session", "sddm-helper",
  ]
}

/// Whether the daemon grants the compositor's connection under server enforcement.
public enum CompositorGrant: Sendable, Hashable {
  case grant
  /// Not granted: why (for the audit's `compositor-refused`, `status` and `doctor`).
  case refuse(String)

  public var isGranted: Bool { self == .grant }

  /// The decision for a compositor the policy trusts as such (`CompositorTrust.trusted`:
  /// it owns `_NET_WM_CM_Sn`, a `compositors` rule names it, it is a root-owned system
  /// program and runs no injected code). It is granted when:
  ///
  /// - it runs as the daemon's user (`daemonUID`): another user's compositor is not this
  ///   session's;
  /// - every process that started it (its ancestors up to PID 1) runs as root or as the
  ///   daemon's user, and is either not a client of this display, a client the module
  ///   trusts, the window manager (i3 starts picom), or a session manager
  ///   (`sessionManagers`: xfce4-session starts xfwm4). An ordinary untrusted client (a
  ///   terminal, any app, root's too) that starts a compositor would lend it the trust the
  ///   module gives: refused;
  /// - the chain was read to its end (`origin.complete`).
  public static func decide(identity: ClientIdentity?, origin: CompositorOrigin?, daemonUID: Int) -> CompositorGrant {
    guard let identity, let pid = identity.pid else { return .refuse("its process is not known") }
    guard let uid = identity.uid else { return .refuse("its user is not known") }
    guard uid == daemonUID else { return .refuse("it runs as uid \(uid), not as the daemon's user (uid \(daemonUID))") }
    guard let origin, origin.pid == pid else { return .refuse("who started it is not known yet") }
    for a in origin.ancestors {
      let who = "PID \(a.pid) (\(a.exe ?? "?"))"
      guard let auid = a.uid else { return .refuse("started by \(who), whose user cannot be read") }
      guard auid == 0 || auid == daemonUID else { return .refuse("started by \(who) of uid \(auid), another user") }
      // Root's processes too: an untrusted client running as root lends no more trust.
      switch a.standing {
      case .notAClient, .trusted, .windowManager: continue
      case .untrusted:
        if isSessionManager(a) { continue }
        return .refuse(
          "started by \(who), an untrusted client of this display (start it from the session, the window manager or systemd --user)"
        )
      }
    }
    guard origin.complete else { return .refuse("the processes that started it could not all be read") }
    return .grant
  }

  /// A session manager's program: its file name is in `CompositorOrigin.sessionManagers`,
  /// in a system directory, owned by root.
  static func isSessionManager(_ a: CompositorOrigin.Ancestor) -> Bool {
    guard let exe = a.exe, a.exeRootOwned == true, Policy.systemDirectories.contains(where: { exe.hasPrefix($0) })
    else { return false }
    let name = exe.split(separator: "/").last.map(String.init) ?? exe
    return CompositorOrigin.sessionManagers.contains(name)
  }
}
