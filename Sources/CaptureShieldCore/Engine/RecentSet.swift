// A set that keeps only the most recent members: past `limit`, the oldest go first.

/// A bounded set of recent members (insertion order; the oldest are forgotten first).
/// Used for the clients that went (`Engine.departed`) and the shield driver's recent
/// at-once targets.
public struct RecentSet<Element: Hashable & Sendable>: Sendable, Hashable {
  /// Kept at most.
  public let limit: Int
  private var order: [Element] = []
  private var members: Set<Element> = []

  public init(limit: Int) { self.limit = limit }

  public func contains(_ e: Element) -> Bool { members.contains(e) }

  /// The number kept.
  public var count: Int { members.count }

  public mutating func insert(_ e: Element) {
    guard members.insert(e).inserted else { return }
    order.append(e)
    if order.count > limit {
      let drop = order.count - limit
      for old in order.prefix(drop) { members.remove(old) }
      order.removeFirst(drop)
    }
  }

  public mutating func remove(_ e: Element) {
    guard members.remove(e) != nil else { return }
    order.removeAll { $0 == e }
  }
}
