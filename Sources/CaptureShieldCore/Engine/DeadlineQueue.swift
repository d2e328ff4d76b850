// Deadlines by key with the earliest at hand: the engine's provisional windows
// (`Engine.unsettled`), whose earliest deadline the loop asks for on every turn.

/// A deadline per key, with the earliest one in O(1) (`earliest`). Setting, replacing and
/// removing a key are amortized O(1) when deadlines are set in time order, as the engine
/// sets them (now plus a fixed limit, and its now never goes back); an earlier one costs
/// a binary search and an insertion.
struct DeadlineQueue<Key: Hashable & Sendable>: Sendable {
  /// The deadline of each key.
  private(set) var deadlines: [Key: MonotonicTime] = [:]
  /// Every deadline set, in time order from `head` on. An entry whose key has another
  /// deadline now, or none, is stale and skipped; the entry at `head` is never stale.
  private var order: [(key: Key, at: MonotonicTime)] = []
  private var head = 0

  init() {}

  /// The earliest deadline, nil when there is none.
  var earliest: MonotonicTime? { head < order.count ? order[head].at : nil }

  var isEmpty: Bool { deadlines.isEmpty }
  var count: Int { deadlines.count }

  /// The deadline of `key`; setting nil removes it.
  subscript(key: Key) -> MonotonicTime? {
    get { deadlines[key] }
    set {
      guard deadlines[key] != newValue else { return }
      deadlines[key] = newValue
      if let at = newValue { enqueue(key, at) }
      dropStaleHead()
    }
  }

  /// Removes and returns the keys whose deadline is `now` or earlier, in key order.
  mutating func removeDue(at now: MonotonicTime) -> [Key] where Key: Comparable {
    var due: Set<Key> = []
    while let first = earliest, first <= now {
      let key = order[head].key
      deadlines[key] = nil
      due.insert(key)
      head += 1
      dropStaleHead()
    }
    return due.sorted()
  }

  private mutating func enqueue(_ key: Key, _ at: MonotonicTime) {
    if let last = order.last, at < last.at {
      // Earlier than the latest: insert in order (after the live entries' equal times).
      var lo = head
      var hi = order.count
      while lo < hi {
        let mid = (lo + hi) / 2
        if order[mid].at <= at { lo = mid + 1 } else { hi = mid }
      }
      order.insert((key, at), at: lo)
    } else {
      order.append((key, at))
    }
  }

  /// Skips stale entries at the head, and drops the skipped part once it is most of the array.
  private mutating func dropStaleHead() {
    while head < order.count, deadlines[order[head].key] != order[head].at { head += 1 }
    if head == order.count {
      order.removeAll(keepingCapacity: true)
      head = 0
    } else if head >= 64, head * 2 >= order.count {
      order.removeFirst(head)
      head = 0
    }
  }
}
