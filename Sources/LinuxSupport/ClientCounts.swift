/// Who holds a server's places: at most `limit` clients in all and `perPeer` from any one peer
/// (an address, a user), so one peer's idle crowd cannot keep every other out. A pure value;
/// `ClientThreads` keeps one under its lock. It holds an entry only for a peer with a client
/// admitted, so it never grows beyond `limit` entries.
public struct ClientCounts: Sendable, Hashable {
  /// Why a client was not admitted.
  public enum Refusal: Sendable, Hashable {
    /// `limit` clients are admitted already.
    case full
    /// `perPeer` clients of this one's peer are.
    case peerFull
  }

  public let limit: Int
  public let perPeer: Int
  public private(set) var admitted = 0
  private var byPeer: [String: Int] = [:]

  public init(limit: Int, perPeer: Int) {
    self.limit = limit
    self.perPeer = perPeer
  }

  /// Counts one more client of `peer`, or says why not (a peer at its share first: that is the
  /// one to tell, whoever else is connected).
  public mutating func admit(_ peer: String) -> Refusal? {
    let held = byPeer[peer, default: 0]
    if held >= perPeer { return .peerFull }
    if admitted >= limit { return .full }
    byPeer[peer] = held + 1
    admitted += 1
    return nil
  }

  /// Gives back a place `admit` gave `peer`.
  public mutating func release(_ peer: String) {
    guard let held = byPeer[peer] else { return }
    byPeer[peer] = held > 1 ? held - 1 : nil
    admitted -= 1
  }

  /// Clients of `peer` admitted now.
  public func count(of peer: String) -> Int { byPeer[peer, default: 0] }
}
