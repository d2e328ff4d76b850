// The peer row: what Linux privacy tools do today, a process-list scanner that looks for
// recorder names about once a second (/proc/*/comm).
import Foundation
import ShieldTestSupport

#if canImport(Glibc)
  import Glibc
#endif

final class PeerScanner: @unchecked Sendable {
  /// Recorder and screenshot process names such scanners look for.
  static let names: Set<String> = [
    "ffmpeg", "obs", "simplescreenrecorder", "scrot", "maim", "import", "xwd", "recordmydesktop", "kazam", "peek",
    "vokoscreen", "vokoscreenNG", "gnome-screenshot", "flameshot", "spectacle", "shutter", "ksnip", "gst-launch-1.0",
    "x11vnc", "zoom", "teams", "discord", "vlc",
  ]

  let interval: Double
  private let lock = NSLock()
  private var running = false
  /// pid → every sighting under a recorder name (comm, monotonic seconds).
  private var seen: [Int32: [(comm: String, at: Double)]] = [:]
  private(set) var scans = 0
  private let finished = DispatchSemaphore(value: 0)

  init(interval: Double = 1) { self.interval = interval }

  func start() {
    lock.lock()
    running = true
    lock.unlock()
    let t = Thread { [self] in loop() }
    t.name = "shieldbench-peer"
    t.start()
  }

  func stop() {
    lock.lock()
    let was = running
    running = false
    lock.unlock()
    if was { finished.wait() }
  }

  /// When the scanner first saw `pid` under a recorder name within [from, to].
  func firstSeen(pid: Int32, from: Double, to: Double) -> (comm: String, at: Double)? {
    lock.lock()
    defer { lock.unlock() }
    return seen[pid]?.first { $0.at >= from && $0.at <= to }
  }

  private func loop() {
    defer { finished.signal() }
    var next = monotonicNow()
    while true {
      lock.lock()
      let go = running
      lock.unlock()
      guard go else { return }
      if monotonicNow() >= next {
        scan()
        next += interval
      }
      sleepSeconds(min(0.05, max(0, next - monotonicNow())))
    }
  }

  private func scan() {
    let now = monotonicNow()
    guard let dir = opendir("/proc") else { return }
    defer { closedir(dir) }
    var hits: [(Int32, String)] = []
    while let ent = readdir(dir) {
      let name = withUnsafeBytes(of: ent.pointee.d_name) { raw in
        String(decoding: raw.prefix(while: { $0 != 0 }), as: UTF8.self)
      }
      guard let pid = Int32(name) else { continue }
      let fd = open("/proc/\(name)/comm", O_RDONLY)
      guard fd >= 0 else { continue }
      var buf = [UInt8](repeating: 0, count: 32)
      let n = read(fd, &buf, buf.count)
      close(fd)
      guard n > 0 else { continue }
      let comm = String(decoding: buf[0..<n], as: UTF8.self).trimmingCharacters(in: .newlines)
      if Self.names.contains(comm) { hits.append((pid, comm)) }
    }
    lock.lock()
    scans += 1
    for (pid, comm) in hits { seen[pid, default: []].append((comm, now)) }
    lock.unlock()
  }
}
