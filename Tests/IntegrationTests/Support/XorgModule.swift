// The CaptureShield Xorg module as the integration tests load it: where `make xorg-module`
// put it, and the programs a test's headless Xorg trusts (the module compares resolved paths).

import CaptureShield
import Foundation
import Glibc
import ShieldTestSupport

enum XorgModule {
  /// Where `make xorg-module` puts the module (`$CAPTURESHIELD_XORG_MODULE_DIR` overrides).
  static let directory =
    ProcessInfo.processInfo.environment["CAPTURESHIELD_XORG_MODULE_DIR"]
    ?? URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .deletingLastPathComponent().deletingLastPathComponent().path + "/.build/xorg"

  /// Whether the module is built (the test command builds it before the tests).
  static var isBuilt: Bool { FileManager.default.fileExists(atPath: directory + "/libcaptureshield.so") }

  /// `path` with symlinks resolved: the module compares /proc/PID/exe, which is resolved.
  static func realPath(_ path: String) -> String {
    guard let p = realpath(path, nil) else { return path }
    defer { free(p) }
    return String(cString: p)
  }

  /// This test process's executable (a test that reads what the user sees trusts it).
  static let testExecutable =
    (try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe")) ?? ""

  /// A copy of `program` in a directory of root's under /run that only root may write, for
  /// a module to trust by its file while the original stays untrusted (the module checks
  /// the file and every directory above it). Made once per test process and name.
  static func trustedCopy(of program: String, named name: String) throws -> String {
    let dir = "/run/captureshield-test-\(getpid())"
    let path = dir + "/" + name
    if FileManager.default.fileExists(atPath: path) { return path }
    mkdir(dir, 0o755)
    chmod(dir, 0o755)
    try? FileManager.default.removeItem(atPath: path)
    try FileManager.default.copyItem(atPath: realPath(program), toPath: path)
    chmod(path, 0o755)
    return path
  }

  /// The daemon the tests run (`Shieldctl.path`), resolved.
  static var daemon: String { realPath(Shieldctl.path) }

  /// Whether the built module knows `Option "Daemon"` (rule daemonrole).
  static var knowsDaemonOption: Bool {
    guard let data = FileManager.default.contents(atPath: directory + "/libcaptureshield.so") else { return false }
    return data.range(of: Data("DaemonUsers".utf8)) != nil
  }

  /// The `Option "Trust"` line of a `SubSection "captureshield"` trusting `programs`.
  static func trustOption(_ programs: [String]) -> String {
    "Option \"Trust\" \"\(programs.joined(separator: ":"))\""
  }

  /// The module's options as the installed snippet sets them (`make install-xorg-module`:
  /// the daemon by its role, no compositor list: the daemon grants the compositor), and
  /// `also` trusted outright (this test process, whose reads are what the user sees).
  static func snippetOptions(alsoTrusting also: [String] = [testExecutable]) -> [String] {
    return ["Option \"Daemon\" \"\(daemon)\"", "Option \"DaemonUsers\" \"\(getuid())\""]
      + (also.isEmpty ? [] : [trustOption(also)])
  }
}
