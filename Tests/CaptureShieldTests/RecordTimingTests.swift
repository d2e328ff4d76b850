// The capture bridge's timing (`RecordTiming`): when the server is poked for RECORD records
// (live sessions, and 2 s after a client connected, every 20 ms), and when a burst of records
// is read in batches (32 records each within 10 ms of the one before).

import Testing

@testable import CaptureShield
@testable import CaptureShieldCore

@Suite struct RecordTimingTests {
  static func ms(_ n: UInt64) -> MonotonicTime { MonotonicTime(nanoseconds: n * 1_000_000) }

  @Test func pokesWhileASessionIsLiveOrAClientJustConnected() {
    var t = RecordTiming(tuning: WatcherTuning())
    var due = t.pokeDue(Self.ms(10_000), sessionsLive: false)
    #expect(!due)
    #expect(t.nextPoke(Self.ms(10_000), sessionsLive: false) == nil)
    due = t.pokeDue(Self.ms(10_000), sessionsLive: true)
    #expect(due)
    due = t.pokeDue(Self.ms(10_010), sessionsLive: true)
    #expect(!due)  // 20 ms apart
    #expect(t.nextPoke(Self.ms(10_010), sessionsLive: true) == Self.ms(10_020))
    due = t.pokeDue(Self.ms(10_020), sessionsLive: true)
    #expect(due)
    t.clientStarted(Self.ms(20_000))
    due = t.pokeDue(Self.ms(21_900), sessionsLive: false)
    #expect(due)
    #expect(!t.wantsPokes(Self.ms(22_000), sessionsLive: false))
  }

  @Test func aBurstOfRecordsIsReadInBatchesOnlyWhenAllowed() {
    var t = RecordTiming(tuning: WatcherTuning())
    t.read(0, now: Self.ms(1000))
    #expect(t.recordRun == 0)
    for i in UInt64(0)..<31 { t.read(1, now: Self.ms(1000 + i * 5)) }
    #expect(t.batchingUntil(Self.ms(1151), mayBatch: true) == nil)  // 31: no burst yet
    t.read(1, now: Self.ms(1155))
    #expect(t.recordRun == 32)
    #expect(t.batchingUntil(Self.ms(1156), mayBatch: true) == Self.ms(1165))
    #expect(t.batchingUntil(Self.ms(1156), mayBatch: false) == nil)
    #expect(t.batchingUntil(Self.ms(1200), mayBatch: true) == nil)  // the batch is due
    // A pause longer than the interval starts a new run.
    t.read(3, now: Self.ms(2000))
    #expect(t.recordRun == 3)
  }
}
