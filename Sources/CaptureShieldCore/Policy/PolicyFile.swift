// What a parsed policy file holds.

/// The validated content of one policy file. Every setting is optional (nil when the file
/// does not set it), so that `PolicyLoader.merge` knows what each file overrides.
public struct PolicyFile: Sendable, Hashable {
  /// The file's path, as given to the parser.
  public var path: String
  /// The schema version (always a known one in a parsed file).
  public var version: Int
  /// `secure`: window rules.
  public var secure: [Matcher]?
  /// `replaceDefaultSecure`: whether the built-in secure list (`Policy.defaultSecure`) is dropped.
  public var replaceDefaultSecure: Bool?
  /// The `capture` section.
  public var capture: Capture
  /// The `shield` section.
  public var shield: Shield
  /// The `clipboard` section.
  public var clipboard: Clipboard
  /// The `notify` section.
  public var notify = Notify()
  /// The `accessibility` section.
  public var accessibility = Accessibility()
  /// The `keyloggers` section.
  public var keyloggers = Keyloggers()

  /// The `keyloggers` section of one file: the client-side keyboard watch.
  public struct Keyloggers: Sendable, Hashable {
    /// `keyloggers.enabled`.
    public var enabled: Bool?
    /// `keyloggers.allow`: programs that may listen to the keyboard.
    public var allow: [Matcher]?
    /// `keyloggers.replaceDefaultAllow`: whether `allow` replaces the built-in list.
    public var replaceDefaultAllow: Bool?
    public init() {}
  }

  public init(
    path: String, version: Int = 1, secure: [Matcher]? = nil, capture: Capture = Capture(),
    shield: Shield = Shield(), clipboard: Clipboard = Clipboard()
  ) {
    self.path = path
    self.version = version
    self.secure = secure
    self.capture = capture
    self.shield = shield
    self.clipboard = clipboard
  }

  /// The `capture` section of one file.
  public struct Capture: Sendable, Hashable {
    /// `capture.allow`: clients that may read pixels without starting a capture session.
    public var allow: [Matcher]?
    /// `capture.known`: clients that start a capture session as soon as they connect.
    public var known: [Matcher]?
    /// `capture.replaceDefaultKnown`: whether `known` replaces the built-in list.
    public var replaceDefaultKnown: Bool?
    /// `capture.linger`.
    public var linger: PolicyDuration?
    /// `capture.hold`: `"connected"` or a duration.
    public var hold: CaptureHold?
    /// `capture.quarantine`: a duration, or `"off"`.
    public var quarantine: Quarantine?
    /// `capture.idle`: a duration, or `"off"` (same form as the quarantine).
    public var idle: Quarantine?
    /// `capture.quarantineOnLaunch`: whether the quarantine starts when an X client program
    /// starts or a process loads the X client library, before it connects.
    public var quarantineOnLaunch: Bool?
    /// `capture.allowInjected`: whether `allow` still trusts a program started with
    /// `LD_PRELOAD`/`LD_AUDIT` or traced by another process.
    public var allowInjected: Bool?
    /// `capture.learn`: whether the daemon learns which programs captured before.
    public var learn: Bool?
    /// `capture.compositors`: compositing managers trusted as the compositor.
    public var compositors: [Matcher]?
    /// `capture.replaceDefaultCompositors`: whether `compositors` replaces the built-in list.
    public var replaceDefaultCompositors: Bool?

    public init(
      allow: [Matcher]? = nil, known: [Matcher]? = nil, replaceDefaultKnown: Bool? = nil,
      linger: PolicyDuration? = nil, quarantine: Quarantine? = nil, quarantineOnLaunch: Bool? = nil,
      hold: CaptureHold? = nil, allowInjected: Bool? = nil
    ) {
      self.allowInjected = allowInjected
      self.allow = allow
      self.known = known
      self.replaceDefaultKnown = replaceDefaultKnown
      self.linger = linger
      self.hold = hold
      self.quarantine = quarantine
      self.quarantineOnLaunch = quarantineOnLaunch
    }
  }

  /// A `capture.quarantine` setting: `"off"` or a duration.
  public enum Quarantine: Sendable, Hashable {
    /// `"off"`: no quarantine (also overrides an earlier file's duration).
    case off
    /// Shield every non-allowed new client's screen for this long.
    case duration(PolicyDuration)

    /// The value as `Policy.quarantine` holds it.
    public var policyValue: PolicyDuration? {
      switch self {
      case .off: return nil
      case .duration(let d): return d
      }
    }
  }

  /// The `shield` section of one file.
  public struct Shield: Sendable, Hashable {
    public var when: ShieldWhen?
    public var failMode: FailMode?
    public var input: ShieldInput?
    public var label: String?

    public init(
      when: ShieldWhen? = nil, failMode: FailMode? = nil, input: ShieldInput? = nil,
      label: String? = nil
    ) {
      self.when = when
      self.failMode = failMode
      self.input = input
      self.label = label
    }
  }

  /// The `notify` section of one file: desktop notifications of capture.
  public struct Notify: Sendable, Hashable {
    /// `notify.enabled`.
    public var enabled: Bool?
    public init(enabled: Bool? = nil) { self.enabled = enabled }
  }

  /// The `accessibility` section of one file: password fields the accessibility bus reports.
  public struct Accessibility: Sendable, Hashable {
    /// `accessibility.passwordFields`.
    public var passwordFields: Bool?
    public init(passwordFields: Bool? = nil) { self.passwordFields = passwordFields }
  }

  /// The `clipboard` section of one file.
  public struct Clipboard: Sendable, Hashable {
    public var enabled: Bool?
    public var sources: [Matcher]?
    public var readers: ClipboardPolicy.ReaderMode?
    public var allow: [Matcher]?
    public var deny: [Matcher]?
    public var clearAfter: PolicyDuration?
    public var maxReads: Int?
    public var selections: [String]?

    public init(
      enabled: Bool? = nil, sources: [Matcher]? = nil, readers: ClipboardPolicy.ReaderMode? = nil,
      allow: [Matcher]? = nil, deny: [Matcher]? = nil, clearAfter: PolicyDuration? = nil,
      maxReads: Int? = nil, selections: [String]? = nil
    ) {
      self.enabled = enabled
      self.sources = sources
      self.readers = readers
      self.allow = allow
      self.deny = deny
      self.clearAfter = clearAfter
      self.maxReads = maxReads
      self.selections = selections
    }
  }
}
