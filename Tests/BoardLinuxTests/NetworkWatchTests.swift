import Foundation
import LinuxSupport
import Synchronization
import Testing

#if canImport(Glibc)
  import Glibc
#endif

@Suite("NetworkWatch: the kernel's address and route announcements")
struct NetworkWatchTests {
  /// One netlink message: nlmsghdr (length, type, flags, sequence, port), little-endian, and
  /// `payload` bytes, padded to 4 bytes as the kernel sends it (the length leaves the padding out).
  private func message(type: UInt16, payload: Int = 8) -> [UInt8] {
    let length = UInt32(16 + payload)
    let header =
      withUnsafeBytes(of: length.littleEndian, Array.init) + withUnsafeBytes(of: type.littleEndian, Array.init)
    let padded = (payload + 3) & ~3
    return header + [UInt8](repeating: 0, count: 10 + padded)
  }

  @Test func anAddressOrARouteAddedIsAGainAndARemovalIsNot() {
    // RTM_NEWLINK 16, RTM_DELADDR 21, RTM_NEWADDR 20, RTM_DELROUTE 25, RTM_NEWROUTE 24.
    #expect(!NetworkWatch.announcesGain(ArraySlice(message(type: 16) + message(type: 21) + message(type: 25))))
    #expect(NetworkWatch.announcesGain(ArraySlice(message(type: 21, payload: 6) + message(type: 20))), "aligned to 4")
    #expect(NetworkWatch.announcesGain(ArraySlice(message(type: 24))))
    // A length that runs past the datagram, or is too short, ends the reading.
    var bad = message(type: 20)
    bad[0] = 200
    #expect(!NetworkWatch.announcesGain(ArraySlice(bad)))
    #expect(!NetworkWatch.announcesGain(ArraySlice(message(type: 21) + [1, 2, 3])))
  }

  /// In a network namespace of its own (unshare(2) moves only the calling thread, which is one
  /// of ours), bringing loopback up announces 127.0.0.1 and its routes: the real kernel's
  /// messages, read through the watch. Needs root (CAP_SYS_ADMIN), as `make test` runs.
  @Test(.enabled(if: getuid() == 0, "needs root for a network namespace"))
  func loopbackComingUpInANamespaceOfItsOwnIsSeen() throws {
    let seen = Mutex<[String]>([])
    let thread = try DeviceThread.start(name: "netns test") {
      func note(_ line: String) { seen.withLock { $0.append(line) } }
      // glibc declares unshare(2) only under _GNU_SOURCE, which Swift's Glibc module lacks.
      typealias Unshare = @convention(c) (Int32) -> Int32
      guard let symbol = dlsym(UnsafeMutableRawPointer(bitPattern: 0), "unshare") else {
        return note("no unshare")
      }
      let cloneNewNet: Int32 = 0x4000_0000  // linux/sched.h
      guard unsafeBitCast(symbol, to: Unshare.self)(cloneNewNet) == 0 else {
        return note("unshare: \(String(cString: strerror(errno)))")
      }
      do {
        let watch = try NetworkWatch()
        note("quiet: \(!watch.drain())")
        let up = try ChildProcess.run("/usr/sbin/ip", ["link", "set", "lo", "up"])
        note("ip: \(up.status)")
        var entry = watch.pollEntry
        note("readable: \(poll(&entry, 1, 5000) == 1)")
        note("gained: \(watch.drain())")
      } catch {
        note("\(error)")
      }
    }
    thread.join()
    #expect(seen.withLock { $0 } == ["quiet: true", "ip: 0", "readable: true", "gained: true"])
  }
}
