// Runs the real daemon (`shieldctl watch`) next to the benchmark and reads its published state.
import CXCB
import CaptureShield
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

/// Where `shieldctl` is: `$SHIELDCTL`, else next to this executable.
func locateShieldctl() -> String? {
  if let p = ProcessInfo.processInfo.environment["SHIELDCTL"], !p.isEmpty { return p }
  guard let exe = try? FileManager.default.destinationOfSymbolicLink(atPath: "/proc/self/exe") else { return nil }
  let p = (exe as NSString).deletingLastPathComponent + "/shieldctl"
  return access(p, X_OK) == 0 ? p : nil
}

/// A scratch directory for logs, policy files and tool output.
func makeScratchDirectory() throws -> String {
  var template = Array((NSTemporaryDirectory() + "/shieldbench-XXXXXX").utf8CString)
  guard let p = mkdtemp(&template) else { throw BenchError("mkdtemp failed") }
  return String(cString: p)
}

/// Writes a policy file (mode 0644: the daemon refuses files writable by others).
func writePolicy(_ text: String, to path: String) throws {
  try text.write(toFile: path, atomically: true, encoding: .utf8)
  chmod(path, 0o644)
}

/// One running daemon.
final class DaemonProcess {
  let child: ChildProcess
  let spawnedAt: Double
  let logPath: String

  init(shieldctl: String, display: String, policy: String, logPath: String, stateHome: String? = nil) throws {
    self.logPath = logPath
    spawnedAt = monotonicNow()
    var environment = ProcessInfo.processInfo.environment
    environment["DISPLAY"] = display
    // The learned history (`capture.learn`): the row's own directory, else one per daemon
    // next to its log, so no row sees what another row's tools did.
    environment["XDG_STATE_HOME"] = stateHome ?? (logPath + ".state")
    child = try ChildProcess(
      shieldctl, ["watch", "--policy", policy, "--display", display], environment: environment,
      stderr: .writeFile(logPath))
  }

  var pid: pid_t { child.pid }

  /// Waits until the published state satisfies `ready` (polling every 5 ms through `probe`,
  /// which must be a connection made before the daemon started). Returns the seconds from
  /// spawn to then.
  @discardableResult
  func waitUntil(
    _ probe: XClient, timeout: Double = 15, pollEvery: Double = 0.005, _ ready: (DaemonState) -> Bool
  ) throws -> Double {
    let deadline = monotonicNow() + timeout
    while monotonicNow() < deadline {
      if let status = child.poll() { throw BenchError("the daemon exited (\(status)); log: \(logPath)") }
      if let s = readState(probe), ready(s) { return monotonicNow() - spawnedAt }
      sleepSeconds(pollEvery)
    }
    throw BenchError("the daemon did not reach the expected state within \(timeout) s; log: \(logPath)")
  }

  func stop() { child.terminateBlocking(grace: .seconds(5)) }
}

/// The daemon's `_CAPTURE_SHIELD_STATE` on the root, decoded.
func readState(_ x: XClient) -> DaemonState? {
  guard let bytes = x.property(x.root, x.atom("_CAPTURE_SHIELD_STATE")), !bytes.isEmpty else { return nil }
  return try? JSONDecoder().decode(DaemonState.self, from: Data(bytes))
}

/// `_CAPTURE_SHIELD_SHIELDS`: the (shield, target) pairs the daemon publishes.
func readShieldRegistry(_ x: XClient) -> [(shield: UInt32, target: UInt32)] {
  let v = x.cardinals(x.root, x.atom("_CAPTURE_SHIELD_SHIELDS"))
  return stride(from: 0, to: v.count - 1, by: 2).map { (v[$0], v[$0 + 1]) }
}
