// The wait for RECORD's StartOfData (`RecordStream.waitForStart`), the one loop the
// capture detector and the small RECORD contexts (TagWatch, SelectionRecorder) share,
// driven by a list of replies instead of a server.

import Testing

@testable import CaptureShield

/// A RECORD reply of `category` (byte 1), 32 bytes, `tag` in its last byte.
private func reply(_ category: RecordedReply.Category, tag: UInt8 = 0) -> [UInt8] {
  var r = [UInt8](repeating: 0, count: 32)
  r[0] = 1
  r[1] = category.rawValue
  r[31] = tag
  return r
}

struct StartCase: Sendable, CustomTestStringConvertible {
  var name: String
  /// What each poll brings, in order; past the end: nothing.
  var polls: [RecordStream.StartPoll]
  /// The connection broke (from the first wait on).
  var broken = false
  var timeout: Duration = .seconds(3600)
  /// Give up after this many other replies (as the detector does at 4096).
  var otherLimit = Int.max
  /// The other replies handed over, by their tag.
  var others: [UInt8]
  /// How often it waited for the descriptor.
  var waits: Int
  /// The error, nil: StartOfData came.
  var error: XError?
  var testDescription: String { name }
}

@Suite struct RecordStartTests {
  static let cases: [StartCase] = [
    StartCase(name: "StartOfData first: nothing else", polls: [.reply(reply(.startOfData))], others: [], waits: 0),
    StartCase(
      name: "replies before StartOfData go to the caller, in order; those after it stay queued",
      polls: [
        .reply(reply(.fromClient, tag: 1)), .reply(reply(.clientStarted, tag: 2)), .reply(reply(.startOfData)),
        .reply(reply(.fromClient, tag: 3)),
      ],
      others: [1, 2], waits: 0),
    StartCase(
      name: "nothing yet: waits for the descriptor, then polls again",
      polls: [.nothing, .nothing, .reply(reply(.fromClient, tag: 7)), .nothing, .reply(reply(.startOfData))],
      others: [7], waits: 3),
    StartCase(
      name: "an error reply: EnableContext failed", polls: [.reply(reply(.fromClient, tag: 1)), .failed(errorCode: 8)],
      others: [1], waits: 0, error: .failed("RECORD EnableContext failed (X error 8)")),
    StartCase(
      name: "the connection broke", polls: [.nothing], broken: true, others: [], waits: 0,
      error: .failed("lost the data connection")),
    StartCase(
      name: "no StartOfData in time", polls: [.nothing], timeout: .zero, others: [], waits: 0,
      error: .failed("RECORD EnableContext: no StartOfData within 0.0 seconds")),
    StartCase(
      name: "the caller gives up (too many replies before StartOfData)",
      polls: (1...5).map { .reply(reply(.fromClient, tag: $0)) } + [.reply(reply(.startOfData))], otherLimit: 3,
      others: [1, 2, 3], waits: 0, error: .failed("too many")),
  ]

  @Test(arguments: RecordStartTests.cases)
  func waitForStart(_ c: StartCase) {
    var polls = c.polls[...]
    var others: [UInt8] = []
    var waits = 0
    var thrown: XError?
    do throws(XError) {
      try RecordStream.waitForStart(
        timeout: c.timeout,
        poll: { polls.popFirst() ?? .nothing },
        broken: { c.broken ? "lost the data connection" : nil },
        waitReadable: { _ in waits += 1 },
        other: { (r: [UInt8]) throws(XError) in
          others.append(r[31])
          guard others.count < c.otherLimit else { throw .failed("too many") }
        })
    } catch {
      thrown = error
    }
    #expect(thrown == c.error)
    #expect(others == c.others)
    #expect(waits == c.waits)
    if c.error == nil { #expect(polls.count == c.polls.count - c.others.count - c.waits - 1) }
  }
}
