import BoardLinux
import Foundation
import LinuxSupport
import SensorProtocols
import Testing
import WorkoutCore

/// The board VM's emulated ANT stick (Tests/BoardVM/guest/ant_stick.py) in its --stdio mode,
/// behind an `ANTTransport` over its pipes, checked with the project's own ANT decoders: what
/// the VM test expects of the service (about 140 bpm with RR intervals, about 200 W at 90 rpm)
/// is what the stick sends.
final class ANTStickEmulatorTests {
  /// The emulator's stdin and stdout as an `ANTTransport`.
  final class PipeTransport: ANTTransport {
    let process = Process()
    let input = Pipe()
    let output = Pipe()

    init(script: String) throws {
      process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
      process.arguments = ["python3", script, "--stdio"]
      process.standardInput = input
      process.standardOutput = output
      try process.run()
    }

    func receive(until deadline: Double?, signal: StopSignal) throws(SystemError) -> [UInt8]? {
      let fd = output.fileHandleForReading.fileDescriptor
      var descriptors = [pollfd(fd: fd, events: Int16(POLLIN), revents: 0)]
      if try signal.poll(&descriptors, until: deadline) { return nil }
      guard descriptors[0].revents != 0 else { return [] }
      var buffer = [UInt8](repeating: 0, count: 512)
      let count = read(fd, &buffer, buffer.count)
      if count <= 0 { throw SystemError("read", errno: count < 0 ? errno : EPIPE, context: "ant_stick.py") }
      return Array(buffer[..<count])
    }

    func send(_ bytes: [UInt8]) throws(SystemError) {
      let sent = bytes.withUnsafeBytes { write(input.fileHandleForWriting.fileDescriptor, $0.baseAddress, $0.count) }
      if sent != bytes.count { throw SystemError.last("write", "ant_stick.py") }
    }

    deinit {
      try? input.fileHandleForWriting.close()
      process.waitUntilExit()
    }
  }

  static let script =
    URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
    .appendingPathComponent("BoardVM/guest/ant_stick.py").path

  /// Every message the stick sends in the next `seconds`, decoded.
  private func messages(from stick: PipeTransport, for seconds: Double) throws -> [ANTStickMessage] {
    var reader = ANTFrameReader()
    var out: [ANTStickMessage] = []
    let deadline = SystemClocks.monotonic() + seconds
    while let bytes = try stick.receive(until: deadline, signal: StopSignal()), !bytes.isEmpty {
      reader.append(bytes)
      while let next = reader.next() {
        guard case .message(let message) = next else { Issue.record("\(next)"); continue }
        out.append(try ANTStickMessage(message))
      }
    }
    return out
  }

  @Test func theStrapAndTheMeterAsTheDecodersReadThem() throws {
    let stick = try PipeTransport(script: Self.script)
    let key = try #require(ANTNetworkKey([1, 2, 3, 4, 5, 6, 7, 8]))
    var commands: [ANTCommand] = [.resetSystem, .requestMessage(channel: 0, id: 0x54)]
    commands += [.setNetworkKey(network: 0, key: key), .libConfig(flags: 0x80)]
    for (channel, profile) in [(UInt8(0), ANTProfile.heartRate), (1, .bicyclePower)] {
      commands += [
        .assignChannel(channel: channel, type: .receiveOnly, network: 0),
        .setChannelID(channel: channel, .wildcard(deviceType: profile.deviceType)),
        .setChannelPeriod(channel: channel, period: profile.channelPeriod),
        .setRFFrequency(channel: channel, offset: ANTCommand.antPlusFrequency),
        .setSearchTimeout(channel: channel, timeout: 12), .openChannel(channel: channel),
      ]
    }
    try stick.send(commands.flatMap(\.bytes))
    let received = try messages(from: stick, for: 3)

    #expect(received.first == .startup(reason: 0x20))
    guard case .capabilities(let capabilities) = received.dropFirst().first else {
      Issue.record("no capabilities: \(received.prefix(2))")
      return
    }
    #expect(capabilities.maxChannels == 8 && capabilities.extendedMessagesEnabled)
    let responses = received.compactMap { message -> ANTChannelCode? in
      if case .channelResponse(_, _, let code) = message { return code } else { return nil }
    }
    #expect(responses == Array(repeating: .responseNoError, count: commands.count - 2))

    var heartRate = ANTHeartRateReadings()
    var power = ANTPowerReadings()
    var bpm: [Int] = []
    var rr: [UInt16] = []
    var watts: [Int] = []
    var rpm: [Double] = []
    var found: [UInt8: ANTChannelID] = [:]
    for case .data(let data) in received {
      found[data.channel] = data.extended.channelID
      let now = SystemClocks.monotonic()
      let result = try data.channel == 0 ? heartRate.update(data.payload, at: now) : power.update(data.payload, at: now)
      rr += result.rrIntervals
      for reading in result.readings {
        switch reading {
        case .heartRate(let value): bpm.append(value)
        case .power(let value): watts.append(value)
        case .cadence(let value): rpm.append(value)
        default: break
        }
      }
    }
    #expect(found[0] == ANTChannelID(deviceNumber: 4242, deviceType: 120, transmissionType: 1))
    #expect(found[1] == ANTChannelID(deviceNumber: 5151, deviceType: 11, transmissionType: 5))
    #expect(bpm.count >= 8 && bpm.allSatisfy { (138...142).contains($0) }, "\(bpm)")
    #expect(rr.count >= 4 && rr.allSatisfy { (432...446).contains($0) }, "\(rr)")
    #expect(watts.count >= 8 && watts.allSatisfy { (195...205).contains($0) }, "\(watts)")
    #expect(rpm.count >= 8 && rpm.allSatisfy { (88...92).contains($0) }, "\(rpm)")
  }
}
