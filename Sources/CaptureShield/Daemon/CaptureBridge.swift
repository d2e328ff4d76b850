// The capture bridge's state: the RECORD context (`CaptureDetector`), what it records, when the
// server is poked to flush records, how busy the record stream is, and the identities looked
// up for clients. Its `drain` routes the records to the engine (`CaptureBridge+Drain`), with the
// loop as its host (`WatcherLoop+Detector`).

/// When to poke the server for RECORD records and when to read them in batches. Pure: the
/// loop hands it the time and what was read.
struct RecordTiming {
  let tuning: WatcherTuning
  /// Poke the server (a cheap round trip) so it flushes pending RECORD records: only while a
  /// session is live or until this time after a client connected.
  private(set) var promptRecordsUntil = MonotonicTime(nanoseconds: 0)
  private(set) var lastPoke = MonotonicTime(nanoseconds: 0)
  /// When the RECORD stream last brought anything, and how many records came in the current
  /// run of reads each within `tuning.batchInterval` of the one before.
  private(set) var lastRecords = MonotonicTime(nanoseconds: 0)
  private(set) var recordRun = 0

  init(tuning: WatcherTuning) { self.tuning = tuning }

  /// Whether the server is to be poked now (`sessionsLive`: the engine has capture sessions).
  func wantsPokes(_ now: MonotonicTime, sessionsLive: Bool) -> Bool { sessionsLive || now < promptRecordsUntil }

  /// When the next poke is due, nil when none is wanted.
  func nextPoke(_ now: MonotonicTime, sessionsLive: Bool) -> MonotonicTime? {
    wantsPokes(now, sessionsLive: sessionsLive) ? lastPoke + tuning.pokeInterval : nil
  }

  /// Whether to poke now; when true, the poke counts as sent.
  mutating func pokeDue(_ now: MonotonicTime, sessionsLive: Bool) -> Bool {
    guard wantsPokes(now, sessionsLive: sessionsLive), now >= lastPoke + tuning.pokeInterval else { return false }
    lastPoke = now
    return true
  }

  /// A client connected: records are asked for promptly for a while.
  mutating func clientStarted(_ now: MonotonicTime) { promptRecordsUntil = now + tuning.promptRecordsAfterConnect }

  /// `count` records were read at `now` (none: nothing changes).
  mutating func read(_ count: Int, now: MonotonicTime) {
    guard count != 0 else { return }
    recordRun = (now < lastRecords + tuning.batchInterval ? recordRun : 0) + count
    lastRecords = now
  }

  /// Until when the RECORD stream is left unread during a burst (`tuning.burstRecords`
  /// records, each within `tuning.batchInterval` of the one before), when batching is
  /// allowed (`mayBatch`: nothing at stake and quarantine off); nil: read at once.
  func batchingUntil(_ now: MonotonicTime, mayBatch: Bool) -> MonotonicTime? {
    guard mayBatch, recordRun >= tuning.burstRecords else { return nil }
    let until = lastRecords + tuning.batchInterval
    return now < until ? until : nil
  }
}

/// The capture bridge: the RECORD context and its timing, and the clients' identities as
/// looked up (`WatcherLoop.identify`). Runs on the loop's thread (the detector's pump has a
/// thread of its own, see `RecordPump`).
final class CaptureBridge {
  /// Request-level capture detection (RECORD); nil when the server lacks RECORD, in which
  /// case `capturing` mode falls back to shielding always (fail safe).
  var detector: CaptureDetector?
  /// Whether `detector` records the requests that can only read pixmaps (see
  /// `WatcherLoop.recordsPixmapReads`).
  var readsPixmaps = false
  /// Set when the engine handled an event that can change whether a trusted compositor runs
  /// (the loop then calls `updatePixmapRecording`).
  var pixmapRecordingCheckDue = false
  var timing: RecordTiming
  /// XFIXES' first event code (0: no XFIXES): selection-owner events of the compositor's selection.
  var xfixesFirstEvent: UInt8 = 0
  /// Identities looked up by client resource base (X-Resource PID, then /proc).
  var identities: [UInt32: ClientIdentity] = [:]

  init(detector: CaptureDetector?, readsPixmaps: Bool, tuning: WatcherTuning) {
    self.detector = detector
    self.readsPixmaps = readsPixmaps
    timing = RecordTiming(tuning: tuning)
  }
}
