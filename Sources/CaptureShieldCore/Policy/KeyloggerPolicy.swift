// The `keyloggers` policy section: the client-side keyboard watch
// (`KeyloggerWatch`; docs/security.md, "Input"). Known input programs (input methods, hotkey daemons) listen to the
// keyboard by design and are allowed: not audited, not named in notices.

/// `keyloggers.*`, merged.
public struct KeyloggerPolicy: Sendable, Hashable {
  /// `keyloggers.enabled`: whether the daemon watches for keyboard listeners (client-side
  /// mode only; the Xorg module keeps them from the keys instead).
  public var enabled = true
  /// `keyloggers.allow` after `defaultAllow` (unless `replaceDefaultAllow`): programs that
  /// may listen to the keyboard.
  public var allow: [Matcher] = KeyloggerPolicy.defaultAllow

  public init() {}

  /// The input methods and hotkey daemons allowed out of the box (by executable name), and
  /// the accessibility registry: at-spi2-registryd selects KeyPress on the root for screen
  /// readers (a GTK or Qt app starts it; seen with KeePassXC and zenity on Xvfb).
  public static let defaultAllowNames = [
    "ibus-daemon", "ibus-x11", "ibus-ui-gtk3", "ibus-engine-*", "fcitx", "fcitx5", "xbindkeys", "sxhkd", "xcape",
    "at-spi2-registryd",
  ]

  public static let defaultAllow: [Matcher] = defaultAllowNames.map { n in
    Matcher(exe: try! Pattern.parse("*/" + n), name: "default: \(n)")
  }

  /// The rule that allows a client with `identity` to listen to the keyboard, if any.
  /// An unidentified client (no executable) is never allowed.
  public func allowRule(_ identity: ClientIdentity?) -> Matcher? {
    guard let identity, identity.exe != nil || identity.comm != nil else { return nil }
    let facts = identity.facts
    return allow.first { $0.matches(facts) }
  }
}
