import LinuxSupport
import Testing

/// The places a server gives its clients, per peer and in all (issue 57: one user's or one
/// address's crowd cannot take every place).
struct ClientCountsTests {
  @Test func onePeersCrowdIsHeldToItsShareAndAnotherPeerStillGetsIn() {
    var counts = ClientCounts(limit: 64, perPeer: 16)
    let admitted = (0..<64).filter { _ in counts.admit("uid 1000") == nil }.count
    #expect(admitted == 16)
    #expect(counts.admit("uid 1000") == .peerFull)
    #expect(counts.admit("uid 0") == nil, "another user's status is answered")
    #expect(counts.admitted == 17 && counts.count(of: "uid 1000") == 16)
  }

  @Test func thePlacesInAllAreKeptAndGivenBack() {
    var counts = ClientCounts(limit: 4, perPeer: 3)
    #expect(["a", "a", "b", "c"].map { counts.admit($0) } == [nil, nil, nil, nil])
    #expect(counts.admit("d") == .full)
    #expect(counts.admit("a") == .full, "below its share, but no place is left")
    counts.release("b")
    #expect(counts.count(of: "b") == 0 && counts.admitted == 3)
    #expect(counts.admit("d") == nil)
    // A place never given is not given back.
    counts.release("e")
    #expect(counts.admitted == 4)
  }

  @Test func aPeerAtItsShareIsToldSoEvenWhenTheServerIsFull() {
    var counts = ClientCounts(limit: 2, perPeer: 2)
    _ = counts.admit("a")
    _ = counts.admit("a")
    #expect(counts.admit("a") == .peerFull)
    #expect(counts.admit("b") == .full)
  }
}
