// The benchmark's own plumbing: errors, clocks and /proc readers. Child processes, the private
// Xvfb and the xcb client come from ShieldTestSupport, shared with the integration tests.
import CXCB
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

struct BenchError: Error, CustomStringConvertible {
  var description: String
  init(_ description: String) { self.description = description }
}

/// Monotonic seconds (CLOCK_MONOTONIC).
func monotonicNow() -> Double {
  var ts = timespec()
  clock_gettime(CLOCK_MONOTONIC, &ts)
  return Double(ts.tv_sec) + Double(ts.tv_nsec) / 1e9
}

func sleepSeconds(_ s: Double) {
  guard s > 0 else { return }
  usleep(useconds_t(min(s, 3_600) * 1e6))
}

func median(_ values: [Double]) -> Double? {
  guard !values.isEmpty else { return nil }
  let s = values.sorted()
  let m = s.count / 2
  return s.count % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2
}

/// What /proc says about one process (all its threads).
struct ProcSample {
  /// utime + stime, clock ticks (the whole process, from /proc/PID/stat).
  var ticks: Int
  /// Sum of the threads' run time in ns (/proc/PID/task/*/schedstat), finer than ticks.
  var runNanoseconds: UInt64
  /// Sum of the threads' voluntary and involuntary context switches.
  var voluntarySwitches: Int
  var involuntarySwitches: Int
  var rssKiB: Int
  var hwmKiB: Int
  /// Per thread (task id): run time in ns, voluntary and involuntary switches.
  var threads: [String: (runNanoseconds: UInt64, voluntary: Int, involuntary: Int)] = [:]

  /// What the process did since `earlier`, thread by thread: a thread that exited in
  /// between (a dispatch worker that went idle) does not make the sums go backwards; its
  /// work after `earlier` is not counted (`exitedThreads` says how many).
  func since(_ earlier: ProcSample) -> (runNanoseconds: UInt64, voluntary: Int, involuntary: Int, exitedThreads: Int) {
    var run: UInt64 = 0
    var voluntary = 0
    var involuntary = 0
    for (tid, now) in threads {
      let before = earlier.threads[tid] ?? (0, 0, 0)
      run += now.runNanoseconds >= before.runNanoseconds ? now.runNanoseconds - before.runNanoseconds : 0
      voluntary += max(0, now.voluntary - before.voluntary)
      involuntary += max(0, now.involuntary - before.involuntary)
    }
    return (run, voluntary, involuntary, earlier.threads.keys.filter { threads[$0] == nil }.count)
  }

  static let ticksPerSecond = Double(sysconf(Int32(_SC_CLK_TCK)))

  static func read(pid: pid_t) -> ProcSample? {
    guard let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
      let close = stat.lastIndex(of: ")")
    else { return nil }
    // Fields after the command name: state is field 3; utime 14, stime 15.
    let fields = stat[stat.index(after: close)...].split(separator: " ")
    guard fields.count > 13, let ut = Int(fields[11]), let st = Int(fields[12]) else { return nil }
    var s = ProcSample(
      ticks: ut + st, runNanoseconds: 0, voluntarySwitches: 0, involuntarySwitches: 0, rssKiB: 0, hwmKiB: 0)
    let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
    for t in tasks {
      var thread: (runNanoseconds: UInt64, voluntary: Int, involuntary: Int) = (0, 0, 0)
      if let ss = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/schedstat", encoding: .utf8),
        let first = ss.split(separator: " ").first, let ns = UInt64(first)
      {
        thread.runNanoseconds = ns
      }
      if let status = try? String(contentsOfFile: "/proc/\(pid)/task/\(t)/status", encoding: .utf8) {
        thread.voluntary = statusValue(status, "voluntary_ctxt_switches:") ?? 0
        thread.involuntary = statusValue(status, "nonvoluntary_ctxt_switches:") ?? 0
      }
      s.runNanoseconds += thread.runNanoseconds
      s.voluntarySwitches += thread.voluntary
      s.involuntarySwitches += thread.involuntary
      s.threads[t] = thread
    }
    if let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) {
      s.rssKiB = statusValue(status, "VmRSS:") ?? 0
      s.hwmKiB = statusValue(status, "VmHWM:") ?? 0
    }
    return s
  }

  private static func statusValue(_ status: String, _ key: String) -> Int? {
    guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(key) }) else { return nil }
    return line.dropFirst(key.count).split(whereSeparator: { $0 == " " || $0 == "\t" }).first.flatMap { Int($0) }
  }
}
