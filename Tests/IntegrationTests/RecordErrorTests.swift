// One X error policy on every connection, the RECORD ones included: an error of an
// unchecked request on the capture detector's or the tag watch's control connection is
// logged through `XErrorPolicy`, naming the connection (before, these were freed unread).

import Foundation
import ShieldTestSupport
import Testing

@testable import CaptureShield

@Suite("X errors on the RECORD connections", .serialized, .timeLimit(.minutes(2)))
struct RecordErrorTests {
  /// The RECORD control connections the daemon opens, each with a way to make it read
  /// what arrived (as the loop does) and its name in the log.
  enum Owner: String, CaseIterable, Sendable {
    case captureDetector
    case tagWatch
  }

  @Test("a BadAtom on a RECORD control connection is logged as an error naming it", arguments: Owner.allCases)
  func controlConnectionErrorIsLogged(owner: Owner) async throws {
    let server = try await XvfbServer.start()
    let path = FileManager.default.temporaryDirectory.appendingPathComponent("record-errors-\(UUID()).log").path
    #expect(FileManager.default.createFile(atPath: path, contents: nil))
    defer { try? FileManager.default.removeItem(atPath: path) }
    let fd = open(path, O_WRONLY | O_APPEND)
    #expect(fd >= 0)
    defer { close(fd) }
    let log = AuditLog(format: .text, syslog: false, environment: [:], output: fd)
    let errors = XErrorPolicy(log: log)
    // An atom no server has: DeleteProperty (major 19) with it fails with BadAtom (5), an
    // error that is no expected race, so it is logged at error level.
    let bogusAtom: UInt32 = 0x0FFF_FFF0
    let name: String
    switch owner {
    case .captureDetector:
      let detector = try CaptureDetector(
        display: server.display, catalog: .standard, startTimeout: .seconds(5), errors: errors)
      detector.control.deleteProperty(detector.control.root, bogusAtom)
      #expect(detector.control.hasExtension("RECORD"))  // a round trip: the error is queued now
      _ = detector.drain { _ in false }
      name = CaptureDetector.controlName
    case .tagWatch:
      let watch = try TagWatch(display: server.display, property: 1, errors: errors)
      watch.control.deleteProperty(watch.control.root, bogusAtom)
      #expect(watch.control.hasExtension("RECORD"))
      _ = watch.drain()
      name = "tag watch's RECORD control"
    }
    let text = try String(contentsOfFile: path, encoding: .utf8)
    #expect(text.contains("X error 5 on the \(name) connection: request major 19"), "log: \(text)")
    await server.stop()
  }
}
