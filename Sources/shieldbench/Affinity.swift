// CPU placement for the overhead row: on a virtual machine, a request/reply ping-pong between
// two processes on different CPUs costs a cross-CPU wake-up that dwarfs the X server's own
// work and varies from run to run. Pinning makes the comparison measure work, not wake-ups.
import Foundation

#if canImport(Glibc)
  import Glibc
#endif

/// Number of CPUs this process may run on.
var onlineCPUs: Int { max(1, Int(sysconf(Int32(_SC_NPROCESSORS_ONLN)))) }

/// Restricts one thread (`tid`, 0 = the calling thread) to the given CPUs. Returns false when
/// the kernel refused (e.g. a CPU that does not exist).
@discardableResult
func pinThread(_ tid: pid_t, to cpus: [Int]) -> Bool {
  var set = cpu_set_t()
  withUnsafeMutableBytes(of: &set) { raw in
    raw.initializeMemory(as: UInt8.self, repeating: 0)
    for c in cpus where c >= 0 && c / 8 < raw.count { raw[c / 8] |= UInt8(1 << (c % 8)) }
  }
  guard let f = setAffinity else { return false }
  return f(tid, MemoryLayout<cpu_set_t>.size, &set) == 0
}

/// glibc's sched_setaffinity, looked up at run time: Swift's Glibc module does not export it
/// (it is declared only under _GNU_SOURCE).
private let setAffinity: (@convention(c) (pid_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32)? = {
  guard let sym = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "sched_setaffinity") else { return nil }
  return unsafeBitCast(sym, to: (@convention(c) (pid_t, Int, UnsafeMutablePointer<cpu_set_t>) -> Int32).self)
}()

/// Restricts every thread of a process (threads it creates later inherit it).
@discardableResult
func pinProcess(_ pid: pid_t, to cpus: [Int]) -> Bool {
  let tasks = (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/task")) ?? []
  var ok = !tasks.isEmpty
  for t in tasks { if let tid = pid_t(t) { ok = pinThread(tid, to: cpus) && ok } }
  return ok
}
