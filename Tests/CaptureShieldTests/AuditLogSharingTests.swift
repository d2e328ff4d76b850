// The daemon's log is shared by its threads (the loop, the notification queue): records
// written at the same time come out as whole lines, one after another.

import Foundation
import Testing

@testable import CaptureShield

#if canImport(Glibc)
  import Glibc
#endif

/// What the reader got, handed from its thread to the test's.
private final class Received: @unchecked Sendable {
  var bytes: [UInt8] = []
}

@Suite struct AuditLogSharingTests {
  /// Two threads write records longer than a pipe holds (each write blocks part-way, where
  /// another writer could get in) through one log into one pipe: every line is whole.
  @Test(arguments: [AuditFormat.json, .text])
  func concurrentWritersNeverTearALine(format: AuditFormat) {
    var fds: [Int32] = [0, 0]
    #expect(pipe(&fds) == 0)
    let (readEnd, writeEnd) = (fds[0], fds[1])
    let log = AuditLog(format: format, syslog: false, environment: [:], output: writeEnd)
    let received = Received()
    let reader = DispatchGroup()
    reader.enter()
    Thread.detachNewThread {
      var buffer = [UInt8](repeating: 0, count: 65536)
      while true {
        let n = read(readEnd, &buffer, buffer.count)
        if n <= 0 { break }
        received.bytes += buffer[..<n]
      }
      reader.leave()
    }
    let writers = ["a", "b"]
    let perWriter = 40
    let length = 100_000  // longer than a pipe's buffer (64 KiB)
    // One thread per writer (as the loop and the notification queue are), started together.
    let start = DispatchSemaphore(value: 0)
    let done = DispatchGroup()
    for letter in writers {
      done.enter()
      Thread.detachNewThread {
        let run = String(repeating: letter, count: length)
        start.wait()
        for k in 0..<perWriter { log.write(AuditRecord("info", [("message", .string("\(run)-\(k)"))])) }
        done.leave()
      }
    }
    for _ in writers { start.signal() }
    done.wait()
    close(writeEnd)
    reader.wait()
    close(readEnd)
    let lines = received.bytes.split(separator: UInt8(ascii: "\n"))
    #expect(lines.count == writers.count * perWriter)
    var seen: Set<String> = []
    for line in lines {
      // One pass over the line: its runs of "a" or "b" longer than one (the fixed text of a
      // line has none). A whole line has exactly one, the message's, then "-" and its number.
      let bytes = Array(line)
      var runs: [(letter: UInt8, count: Int, end: Int)] = []
      var i = 0
      while i < bytes.count {
        let b = bytes[i]
        guard b == UInt8(ascii: "a") || b == UInt8(ascii: "b") else {
          i += 1
          continue
        }
        var j = i
        while j < bytes.count && bytes[j] == b { j += 1 }
        if j - i > 1 { runs.append((b, j - i, j)) }
        i = j
      }
      #expect(runs.count == 1 && runs.first?.count == length, "a torn line: runs of \(runs.prefix(4).map(\.count))")
      guard runs.count == 1, let run = runs.first, run.count == length, run.end < bytes.count,
        bytes[run.end] == UInt8(ascii: "-")
      else { continue }
      let number = bytes[(run.end + 1)...].prefix { $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }
      seen.insert(String(decoding: [run.letter] + number, as: UTF8.self))
    }
    #expect(seen == Set(writers.flatMap { w in (0..<perWriter).map { "\(w)\($0)" } }))
  }
}
