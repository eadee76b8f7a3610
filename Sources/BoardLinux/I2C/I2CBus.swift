import CLinuxShims
import Foundation
import LinuxSupport

#if canImport(Glibc)
  import Glibc
#endif

/// One peripheral on an I2C bus through i2c-dev (`Documentation/i2c/dev-interface.rst`), spoken
/// to with SMBus transfers only: byte reads/writes and I2C block reads of at most 32 bytes.
/// Real boards support them, and so does the test VM's i2c-stub, which does not do plain
/// I2C_RDWR transfers.
/// Used by the barometer's thread alone; an SMBus transfer is one ioctl(2), atomic in the kernel.
public final class I2CDevice: Sendable {
  public let busPath: String
  public let address: UInt8
  private let file: FileDescriptor
  private var descriptor: Int32 { file.rawValue }

  /// Opens `busPath` (e.g. /dev/i2c-1) and selects the peripheral at `address`.
  public init(busPath: String, address: UInt8) throws(SystemError) {
    self.busPath = busPath
    self.address = address
    file = try FileDescriptor.open(busPath, O_RDWR)
    let descriptor = file.rawValue
    do throws(SystemError) {
      let functionality = shim_i2c_functionality(descriptor)
      guard shim_i2c_supports_smbus_block(functionality) != 0 else {
        throw SystemError("ioctl I2C_FUNCS", errno: EOPNOTSUPP, context: "\(busPath) lacks SMBus byte and block reads")
      }
      try retryingInterrupts("ioctl I2C_SLAVE", String(format: "%@ 0x%02x", busPath, address)) {
        shim_i2c_set_address(descriptor, Int32(address))
      }
    } catch {
      try? file.close()
      throw error
    }
  }

  public func readByte(_ register: UInt8) throws(SystemError) -> UInt8 {
    let value = try retryingInterrupts("i2c read", context(register)) { shim_i2c_read_byte_data(descriptor, register) }
    return UInt8(value)
  }

  public func writeByte(_ register: UInt8, _ value: UInt8) throws(SystemError) {
    try retryingInterrupts("i2c write", context(register)) { shim_i2c_write_byte_data(descriptor, register, value) }
  }

  /// Reads `count` (≤ 32) consecutive registers from `register`.
  public func readBlock(_ register: UInt8, count: Int) throws(SystemError) -> [UInt8] {
    precondition(count > 0 && count <= 32, "an SMBus block holds 1 to 32 bytes")
    var buffer = [UInt8](repeating: 0, count: count)
    let got = try retryingInterrupts("i2c block read", context(register)) {
      shim_i2c_read_block(descriptor, register, UInt8(count), &buffer)
    }
    guard got == count else {
      throw SystemError("i2c block read", errno: EIO, context: "\(context(register)): \(got) of \(count) bytes")
    }
    return buffer
  }

  private func context(_ register: UInt8) -> String {
    String(format: "%@ 0x%02x register 0x%02x", busPath, address, register)
  }

  /// Finds an I2C bus: a path (/dev/i2c-1), a number ("1"), or the adapter's name as
  /// /sys/class/i2c-dev/*/name gives it ("bcm2835 (i2c@7e804000)", "SMBus stub driver") —
  /// by name, because bus numbers depend on probe order. Nil when there is no such bus.
  public static func findBus(_ description: String, sysfs: String = "/sys/class/i2c-dev") -> String? {
    // Alternatives separated by "|" are tried in order.
    let candidates = description.split(separator: "|").map { $0.trimmingCharacters(in: .whitespaces) }
    if candidates.count > 1 { return candidates.lazy.compactMap { findBus($0, sysfs: sysfs) }.first }
    if description.hasPrefix("/dev/") {
      return FileManager.default.fileExists(atPath: description) ? description : nil
    }
    if let number = Int(description) {
      let path = "/dev/i2c-\(number)"
      return FileManager.default.fileExists(atPath: path) ? path : nil
    }
    let buses = (try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []
    for bus in buses.sorted() {
      guard let name = try? String(contentsOfFile: "\(sysfs)/\(bus)/name", encoding: .utf8) else { continue }
      if name.trimmingCharacters(in: .whitespacesAndNewlines) == description { return "/dev/\(bus)" }
    }
    return nil
  }

  /// The adapter names on this machine, for error messages.
  public static func busNames(sysfs: String = "/sys/class/i2c-dev") -> [String] {
    let buses = (try? FileManager.default.contentsOfDirectory(atPath: sysfs)) ?? []
    return buses.sorted().compactMap { bus in
      (try? String(contentsOfFile: "\(sysfs)/\(bus)/name", encoding: .utf8)).map {
        "\(bus): \($0.trimmingCharacters(in: .whitespacesAndNewlines))"
      }
    }
  }
}
