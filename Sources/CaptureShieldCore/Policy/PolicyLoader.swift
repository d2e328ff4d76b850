import Foundation

#if canImport(Glibc)
  import Glibc
#elseif canImport(Musl)
  import Musl
#elseif canImport(Darwin)
  import Darwin
#endif

/// Finds, reads and merges policy files into one `Policy`.
public enum PolicyLoader {
  /// Where system-wide policy files live (`*.json5`, loaded in name order).
  public static let systemDirectory = "/etc/captureshield/policy.d"
  /// Policy files larger than this are refused.
  public static let maxFileSize = 1 << 20

  // MARK: Discovery

  /// The policy files to load, in load order: the `*.json5` files of `systemDirectory`
  /// sorted by name (hidden files skipped), then `$XDG_CONFIG_HOME/captureshield/policy.json5`
  /// (`$HOME/.config/...` when `XDG_CONFIG_HOME` is unset, empty or relative), then the
  /// remembered rules next to it (`RememberedRules`, which `shieldctl tag --remember`
  /// writes). Only files that exist are listed.
  public static func defaultPaths(
    environment: [String: String] = ProcessInfo.processInfo.environment,
    fileManager: FileManager = .default,
    systemDirectory: String = PolicyLoader.systemDirectory
  ) -> [String] {
    var paths: [String] = []
    if let names = try? fileManager.contentsOfDirectory(atPath: systemDirectory) {
      let sorted =
        names
        .filter { $0.hasSuffix(".json5") && !$0.hasPrefix(".") }
        .sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
      for name in sorted {
        let path = (systemDirectory as NSString).appendingPathComponent(name)
        if isFile(path, fileManager) { paths.append(path) }
      }
    }
    if let user = userPath(environment: environment), isFile(user, fileManager) {
      paths.append(user)
    }
    if let remembered = RememberedRules.path(environment: environment), isFile(remembered, fileManager) {
      paths.append(remembered)
    }
    return paths
  }

  /// `$XDG_CONFIG_HOME/captureshield/policy.json5`, or under `$HOME/.config`; nil when
  /// neither variable gives an absolute directory.
  public static func userPath(environment: [String: String]) -> String? {
    let base: String
    if let xdg = environment["XDG_CONFIG_HOME"], xdg.hasPrefix("/") {
      base = xdg
    } else if let home = environment["HOME"], home.hasPrefix("/") {
      base = (home as NSString).appendingPathComponent(".config")
    } else {
      return nil
    }
    return ((base as NSString).appendingPathComponent("captureshield") as NSString)
      .appendingPathComponent("policy.json5")
  }

  static func isFile(_ path: String, _ fileManager: FileManager) -> Bool {
    var isDirectory: ObjCBool = false
    return fileManager.fileExists(atPath: path, isDirectory: &isDirectory) && !isDirectory.boolValue
  }

  // MARK: Loading

  /// Reads, parses and merges `paths` (in order). Every file is checked even when an
  /// earlier one fails; if any has a problem, all diagnostics are thrown and no policy
  /// is returned (keeping the last good policy is the caller's job).
  public static func load(paths: [String]) throws(PolicyError) -> Policy {
    var files: [PolicyFile] = []
    var diagnostics: [PolicyDiagnostic] = []
    for path in paths {
      do {
        let text = try readPolicyText(path)
        files.append(try PolicyParser.parse(text, path: path))
      } catch let error as PolicyDiagnostic {
        diagnostics.append(error)
      } catch let error as PolicyError {
        diagnostics += error.diagnostics
      } catch {
        diagnostics.append(
          PolicyDiagnostic(location: start(of: path), message: "cannot read: \(error)"))
      }
    }
    guard diagnostics.isEmpty else { throw PolicyError(diagnostics: diagnostics) }
    return merge(files)
  }

  /// `load(paths:)`, except that a broken `optional` file (the remembered rules, which
  /// shieldctl writes) is left out instead of failing the whole policy: the rest still
  /// protects. Its diagnostics are returned, for the caller to report.
  public static func load(paths: [String], optional: String?) throws(PolicyError) -> (
    policy: Policy, skipped: PolicyError?
  ) {
    guard let optional, paths.contains(optional) else { return (try load(paths: paths), nil) }
    var skipped: PolicyError?
    do {
      _ = try load(paths: [optional])
    } catch {
      skipped = error
    }
    return (try load(paths: skipped == nil ? paths : paths.filter { $0 != optional }), skipped)
  }

  static func start(of path: String) -> SourceLocation {
    SourceLocation(file: path, line: 1, column: 1)
  }

  /// Reads a policy file in one go after checking it is a regular file, not writable by
  /// other users, and not too large. The checks and the read use the same descriptor,
  /// so the file cannot be swapped in between.
  static func readPolicyText(_ path: String) throws(PolicyDiagnostic) -> String {
    func failure(_ message: String) -> PolicyDiagnostic {
      PolicyDiagnostic(location: start(of: path), message: message)
    }
    func errnoText() -> String { String(cString: strerror(errno)) }

    // O_NONBLOCK: opening a FIFO must not hang the daemon.
    let fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY)
    guard fd >= 0 else { throw failure("cannot read: \(errnoText())") }
    defer { close(fd) }
    var st = stat()
    guard fstat(fd, &st) == 0 else { throw failure("cannot read: \(errnoText())") }
    let mode = UInt32(st.st_mode)
    guard mode & UInt32(S_IFMT) == UInt32(S_IFREG) else {
      let what = mode & UInt32(S_IFMT) == UInt32(S_IFDIR) ? "is a directory" : "not a regular file"
      throw failure("cannot read: \(what)")
    }
    if mode & 0o002 != 0 {
      let octal = String(mode & 0o7777, radix: 8)
      let shown = String(repeating: "0", count: max(0, 4 - octal.count)) + octal
      throw failure(
        "refusing policy file writable by other users (mode \(shown)); run chmod o-w \(path)")
    }
    let limitText = "refusing policy file larger than 1 MiB"
    guard Int(st.st_size) <= maxFileSize else {
      throw failure("\(limitText) (\(st.st_size) bytes)")
    }

    var bytes = [UInt8](repeating: 0, count: maxFileSize + 1)
    var count = 0
    while count < bytes.count {
      let n = bytes.withUnsafeMutableBytes { buffer in
        read(fd, buffer.baseAddress! + count, buffer.count - count)
      }
      if n < 0 {
        if errno == EINTR { continue }
        throw failure("cannot read: \(errnoText())")
      }
      if n == 0 { break }
      count += n
    }
    guard count <= maxFileSize else { throw failure("\(limitText) (it grew while being read)") }
    bytes.removeSubrange(count...)
    return try decodeUTF8(bytes, path: path)
  }

  /// The text of `bytes`, or a diagnostic at the first byte that is not UTF-8.
  static func decodeUTF8(_ bytes: [UInt8], path: String) throws(PolicyDiagnostic) -> String {
    if let text = String(validating: bytes, as: UTF8.self) { return text }
    var line = 1
    var column = 1
    var previous: Unicode.Scalar?
    var parser = Unicode.UTF8.ForwardParser()
    var iterator = bytes.makeIterator()
    decoding: while true {
      switch parser.parseScalar(from: &iterator) {
      case .valid(let encoded):
        let c = Unicode.UTF8.decode(encoded)
        if c == "\n" && previous == "\r" {
          // \r\n already counted as one line break at the \r
        } else if c == "\n" || c == "\r" {
          line += 1
          column = 1
        } else {
          column += 1
        }
        previous = c
      case .emptyInput:
        break decoding
      case .error:
        break decoding
      }
    }
    throw PolicyDiagnostic(
      location: SourceLocation(file: path, line: line, column: column),
      message: "the file is not valid UTF-8")
  }

  // MARK: Merging

  /// Merges files (in load order) over the defaults of `Policy()`:
  /// - lists (`secure`, `capture.allow`, `capture.known`, `clipboard.sources`, `.allow`,
  ///   `.deny`) are concatenated, earlier files first (first match wins, so the
  ///   system-wide files decide first);
  /// - the built-in secure rules (`Policy.defaultSecure`) stay, after every file's `secure`
  ///   rules, unless the last file that sets `replaceDefaultSecure` sets it to true;
  /// - `capture.known` starts from `Policy.defaultKnownCapturers` unless the last file
  ///   that sets `capture.replaceDefaultKnown` sets it to true;
  /// - every other setting (including `clipboard.selections`) is taken from the last file
  ///   that sets it.
  /// `Policy.sources` lists the files' paths.
  public static func merge(_ files: [PolicyFile]) -> Policy {
    var policy = Policy()
    var known: [Matcher] = []
    var replaceDefaultKnown = false
    var replaceDefaultSecure = false
    var compositors: [Matcher] = []
    var replaceDefaultCompositors = false
    var keyloggerAllow: [Matcher] = []
    var replaceDefaultKeyloggerAllow = false
    for file in files {
      policy.sources.append(file.path)
      policy.version = file.version
      policy.secure += file.secure ?? []
      if let v = file.replaceDefaultSecure { replaceDefaultSecure = v }

      let c = file.capture
      policy.captureAllow += c.allow ?? []
      known += c.known ?? []
      if let v = c.replaceDefaultKnown { replaceDefaultKnown = v }
      if let v = c.linger { policy.linger = v }
      if let v = c.hold { policy.hold = v }
      if let v = c.idle { policy.idle = v.policyValue }
      if let v = c.quarantine { policy.quarantine = v.policyValue }
      if let v = c.quarantineOnLaunch { policy.quarantineOnLaunch = v }
      if let v = c.allowInjected { policy.allowInjected = v }
      if let v = c.learn { policy.learn = v }
      compositors += c.compositors ?? []
      if let v = c.replaceDefaultCompositors { replaceDefaultCompositors = v }

      let s = file.shield
      if let v = s.when { policy.when = v }
      if let v = s.failMode { policy.failMode = v }
      if let v = s.input { policy.input = v }
      if let v = s.label { policy.label = v }

      let b = file.clipboard
      if let v = b.enabled { policy.clipboard.enabled = v }
      policy.clipboard.sources += b.sources ?? []
      if let v = b.readers { policy.clipboard.readers = v }
      policy.clipboard.allow += b.allow ?? []
      policy.clipboard.deny += b.deny ?? []
      if let v = b.clearAfter { policy.clipboard.clearAfter = v }
      if let v = b.maxReads { policy.clipboard.maxReads = v }
      if let v = b.selections { policy.clipboard.selections = v }
      if let v = file.notify.enabled { policy.notify = v }
      if let v = file.accessibility.passwordFields { policy.passwordFields = v }
      if let v = file.keyloggers.enabled { policy.keyloggers.enabled = v }
      keyloggerAllow += file.keyloggers.allow ?? []
      if let v = file.keyloggers.replaceDefaultAllow { replaceDefaultKeyloggerAllow = v }
    }
    policy.keyloggers.allow = (replaceDefaultKeyloggerAllow ? [] : KeyloggerPolicy.defaultAllow) + keyloggerAllow
    policy.builtinSecure = replaceDefaultSecure ? [] : Policy.defaultSecure
    policy.captureKnown = (replaceDefaultKnown ? [] : Policy.defaultKnownCapturers) + known
    policy.compositors = (replaceDefaultCompositors ? [] : Policy.defaultCompositors) + compositors
    return policy
  }
}
