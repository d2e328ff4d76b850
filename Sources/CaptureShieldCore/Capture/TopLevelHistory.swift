/// Where each top-level window has been since it was last mapped, from the root's structure
/// events (CreateNotify and ConfigureNotify carry the area; no request needed). A window
/// keeps its contents when it moves, so a client's window mapped over a secure window and
/// moved away still shows the secure window's pixels; `OwnDrawableRead.verdict` checks
/// these areas too. Pure: the shell feeds it the events.
public struct TopLevelHistory: Sendable, Hashable {
  /// Each top-level's current area.
  var areas: [UInt32: ScreenRect] = [:]
  /// Areas each mapped top-level occupied since its last map (at most `limit`; beyond that,
  /// the last one grows to cover the new ones).
  var visited: [UInt32: [ScreenRect]] = [:]
  /// Places kept per window.
  public static let limit = 16

  public init() {}

  /// CreateNotify (or ConfigureNotify) of a top-level: its area now.
  public mutating func placed(_ window: UInt32, _ area: ScreenRect) {
    areas[window] = area
    guard var places = visited[window] else { return }
    if places.last == area { return }
    if places.count < Self.limit {
      places.append(area)
    } else {
      places[places.count - 1] = places[places.count - 1].union(area)
    }
    visited[window] = places
  }

  /// MapNotify: the window shows the screen where it is now (a window with background None).
  public mutating func mapped(_ window: UInt32) {
    visited[window] = areas[window].map { [$0] } ?? []
  }

  /// DestroyNotify.
  public mutating func destroyed(_ window: UInt32) {
    areas[window] = nil
    visited[window] = nil
  }

  /// Where the client's (resource-id base `base`) top-levels have been since last mapped.
  /// An unmapped window keeps its places until it is mapped again: the read that counts
  /// may be decided after the window was unmapped.
  public func places(ofClient base: UInt32, resourceMask: UInt32) -> [ScreenRect] {
    visited.filter { $0.key & ~resourceMask == base }.flatMap(\.value)
  }

  /// The number of windows followed (for tests and diagnostics).
  public var count: Int { areas.count }
}
