import LinuxSupport
import Testing

/// `NetworkInterfaces.ipv4Addresses`: what the phone page offers as the board's addresses when it
/// listens on all of them. This machine's own interfaces, read for real.
struct NetworkInterfacesTests {
  @Test func theAddressesAreDottedQuadsWithLoopbackLast() {
    let addresses = NetworkInterfaces.ipv4Addresses()
    // Every Linux machine has its loopback up (the integration tests reach gpsd through it).
    #expect(addresses.last == "127.0.0.1", "\(addresses)")
    for address in addresses {
      let parts = address.split(separator: ".", omittingEmptySubsequences: false)
      #expect(parts.count == 4 && parts.allSatisfy { UInt8($0) != nil }, "\(address)")
    }
  }
}
