import SensorProtocols
import Testing
import WorkoutCore
import WorkoutTestSupport

@testable import BoardLinux

/// `ANTStickLink` as the value it is: the stick's messages (`ANTTestStick`) and the time in,
/// actions out, on a manual clock. `ANTStickSourceTests` run the same through a socket and a
/// thread.
@Suite struct ANTStickLinkTests {
  static let key = ANTNetworkKey([1, 2, 3, 4, 5, 6, 7, 8])!
  static let heartRate = ANTSensor(profile: .heartRate, deviceNumber: 4242, transmissionType: 1)
  static let anyPower = ANTSensor(profile: .bicyclePower)

  static func settings(_ sensors: [ANTSensor]) -> ANTStickSettings {
    var settings = ANTStickSettings(networkKey: key, sensors: sensors)
    settings.silenceLimit = 15
    settings.searchTimeout = 30
    return settings
  }

  /// A link and its stick, every command answered at once unless `answering` is off.
  struct Harness {
    var link: ANTStickLink
    var stick = ANTTestStick()
    var actions: [ANTStickLink.Action] = []
    var now = 100.0

    init(_ sensors: [ANTSensor], stick: ANTTestStick = ANTTestStick()) {
      link = ANTStickLink(settings: ANTStickLinkTests.settings(sensors))
      self.stick = stick
    }

    mutating func start() { settle(link.start(now: now)) }

    /// Records `pending`, carries its sends to the stick and the stick's answers back, in the
    /// order a real stick sends them, until nothing is left to send.
    mutating func settle(_ pending: [ANTStickLink.Action]) {
      actions += pending
      var answers: [ANTMessage] = []
      for case .send(let bytes) in pending { answers += stick.answer(Self.message(bytes)) }
      for answer in answers { settle(link.received(answer, now: now)) }
    }

    static func message(_ bytes: [UInt8]) -> ANTMessage {
      var reader = ANTFrameReader()
      reader.append(bytes)
      guard case .message(let message) = reader.next() else { fatalError("not one framed message: \(bytes)") }
      return message
    }

    mutating func receive(_ message: ANTMessage) { settle(link.received(message, now: now)) }

    mutating func page(_ payload: [UInt8], on channel: UInt8, from sensor: ANTSensor) {
      receive(stick.broadcast(payload, on: channel, from: sensor.channelID))
    }

    mutating func elapse(to time: Double) {
      now = time
      settle(link.timeElapsed(now: now))
    }

    var ended: DeviceProblem? {
      actions.lazy.compactMap { if case .end(let problem) = $0 { problem } else { nil } }.first
    }

    var sent: [ANTMessage] { actions.compactMap { if case .send(let bytes) = $0 { Self.message(bytes) } else { nil } } }

    func reports(_ channel: Int) -> [ANTStickLink.Report] {
      actions.compactMap { if case .sensor(channel, let report) = $0 { report } else { nil } }
    }

    var readings: [SensorReading] {
      actions.compactMap { if case .post(.reading(let reading)) = $0 { reading } else { nil } }
    }

    var stickAvailable: String? {
      actions.lazy.compactMap { if case .stick(.available(let detail)) = $0 { detail } else { nil } }.first
    }
  }

  @Test func startUpSendsEachCommandOnlyAfterTheAnswerToThePreviousOne() throws {
    var h = Harness([Self.heartRate, Self.anyPower])
    let start = h.link.start(now: h.now)
    #expect(start == [.send(ANTCommand.resetSystem.bytes)])
    #expect(h.link.deadline == 103, "the stick has 3 s to send Startup")
    // Answer by hand, one message at a time: every step sends exactly one command.
    var stick = ANTTestStick()
    var pending = start
    var order: [UInt8] = []
    while let first = pending.first {
      guard case .send(let bytes) = first else { break }
      #expect(pending.count == 1, "one command at a time: \(pending)")
      let command = Harness.message(bytes)
      order.append(command.id)
      let answers = stick.answer(command)
      // A response to another command, or on another channel, moves nothing.
      #expect(h.link.received(ANTMessage(id: 0x40, content: [7, 0x99, 0]), now: h.now).isEmpty)
      pending = answers.flatMap { h.link.received($0, now: h.now) }
      h.actions += pending
    }
    let channel: [UInt8] = [0x42, 0x51, 0x43, 0x45, 0x44, 0x4B]
    #expect(order == [0x4A, 0x4D, 0x46, 0x6E] + channel + channel)
    let commands = stick.commands
    #expect(commands[2].content == [0] + Self.key.bytes, "the key on network 0")
    #expect(commands[3].content == [0x00, 0x80], "the channel ID in every data message")
    #expect(commands[4].content == [0, 0x00, 0], "channel 0 a receiver on network 0")
    #expect(commands[5].content == [0, 0x92, 0x10, 120, 1], "heart rate 4242 (0x1092), type 1")
    #expect(commands[6].content == [0, 0x86, 0x1F], "8070/32768 s")
    #expect(commands[7].content == [0, 57], "2457 MHz")
    #expect(commands[8].content == [0, 12], "30 s in 2.5 s units")
    #expect(commands[11].content == [1, 0, 0, 11, 0], "a wildcard power meter")
    #expect(commands[12].content == [1, 0xF6, 0x1F], "8182/32768 s")
    #expect(h.stickAvailable == "ANT stick, 8 channels; 2 ANT+ sensor(s)")
    #expect(h.ended == nil)
    #expect(h.link.deadline == nil, "nothing awaited, no sensor sending")
  }

  @Test func aStickThatSendsNoStartupDoesNotAnswer() {
    var stick = ANTTestStick()
    stick.answersReset = false
    var h = Harness([Self.heartRate], stick: stick)
    h.start()
    h.elapse(to: 102.9)
    #expect(h.ended == nil)
    h.elapse(to: 103)
    #expect(h.ended == DeviceProblem(condition: .failing, description: "the ANT stick does not answer"))
  }

  @Test func aCommandTheStickRefusesEndsTheAttemptNamingItAndTheCode() {
    var stick = ANTTestStick()
    stick.refused = (0x43, 0x33)
    var h = Harness([Self.heartRate], stick: stick)
    h.start()
    #expect(
      h.ended?.description == "the ANT stick refused Channel Period on channel 0: INVALID_PARAMETER_PROVIDED")
    #expect(h.stick.commandIDs.last == 0x43, "nothing sent after the refusal")
    #expect(h.stickAvailable == nil)
  }

  @Test func aCommandLeftUnansweredEndsTheAttempt() {
    var h = Harness([Self.heartRate])
    _ = h.link.start(now: h.now)
    let request = h.link.received(ANTMessage(id: 0x6F, content: [0x20]), now: h.now)
    #expect(request == [.send(ANTCommand.requestMessage(channel: 0, id: 0x54).bytes)])
    h.elapse(to: 102)
    #expect(h.ended?.description == "the ANT stick did not answer Request Message on channel 0 in 2 s")
  }

  @Test func moreSensorsThanTheStickHasChannelsAreRefused() {
    var stick = ANTTestStick()
    stick.maxChannels = 1
    var h = Harness([Self.heartRate, Self.anyPower], stick: stick)
    h.start()
    #expect(
      h.ended?.description == "2 ANT+ sensors are set up but the ANT stick has 1 channels: remove 1")
    #expect(h.stick.commandIDs == [0x4A, 0x4D], "no channel set up")
  }

  @Test func aWildcardsFindIsReportedOnceFromTheExtendedData() {
    var h = Harness([Self.anyPower])
    h.start()
    let found = ANTSensor(profile: .bicyclePower, deviceNumber: 777, transmissionType: 5)
    for count in UInt8(1)...3 {
      h.page(
        ANTPages.powerOnly(count: count, accumulated: UInt16(count) * 200, watts: 200, rpm: 90), on: 0, from: found)
    }
    let paired = h.actions.compactMap {
      if case .paired(let channel, let sensor) = $0 { (channel, sensor) } else { nil }
    }
    #expect(paired.count == 1)
    #expect(paired.first?.0 == 0 && paired.first?.1 == found)
    #expect(h.reports(0).first == .available("ANT+ power meter 777"))
    #expect(!h.stick.commandIDs.dropFirst(4).contains(0x4D), "no request: the data carried the ID")
  }

  @Test func withoutExtendedMessagesAWildcardsFindIsAskedForOnce() {
    var stick = ANTTestStick()
    stick.extendedMessages = false
    let found = ANTSensor(profile: .bicyclePower, deviceNumber: 778, transmissionType: 5)
    stick.sensors[0] = found.channelID
    var h = Harness([Self.anyPower], stick: stick)
    h.start()
    #expect(!h.stick.commandIDs.contains(0x6E), "no Lib Config on a stick that cannot")
    for count in UInt8(1)...3 {
      h.page(
        ANTPages.powerOnly(count: count, accumulated: UInt16(count) * 200, watts: 200, rpm: 90), on: 0, from: found)
    }
    let requests = h.stick.commands.filter { $0.id == 0x4D && $0.content == [0, 0x51] }
    #expect(requests.count == 1)
    let paired = h.actions.compactMap { if case .paired(_, let sensor) = $0 { sensor } else { nil } }
    #expect(paired == [found])
    #expect(h.reports(0).contains(.availableDetail("ANT+ power meter 778")))
  }

  @Test func aWildcardReopenedLearnsItsNextFindAfresh() {
    var stick = ANTTestStick()
    stick.extendedMessages = false
    let first = ANTSensor(profile: .bicyclePower, deviceNumber: 778, transmissionType: 5)
    let second = ANTSensor(profile: .bicyclePower, deviceNumber: 779, transmissionType: 5)
    stick.sensors[0] = first.channelID
    var h = Harness([Self.anyPower], stick: stick)
    h.start()
    h.page(ANTPages.powerOnly(count: 1, accumulated: 200, watts: 200, rpm: 90), on: 0, from: first)
    h.receive(ANTTestStick.event(.channelClosed, on: 0))
    h.stick.sensors[0] = second.channelID
    h.page(ANTPages.powerOnly(count: 1, accumulated: 200, watts: 200, rpm: 90), on: 0, from: second)
    let paired = h.actions.compactMap { if case .paired(_, let sensor) = $0 { sensor } else { nil } }
    #expect(paired == [first, second])
    #expect(h.reports(0).last == .availableDetail("ANT+ power meter 779"))
  }

  @Test func aSearchThatTimesOutIsAbsentAndTheChannelIsOpenedAgain() {
    var h = Harness([Self.heartRate])
    h.start()
    let opens = h.stick.commandIDs.filter { $0 == 0x4B }.count
    h.receive(ANTTestStick.event(.rxSearchTimeout, on: 0))
    #expect(
      h.reports(0) == [
        .problem(DeviceProblem(condition: .absent, description: "ANT+ heart rate 4242 not found in 30 s of search"))
      ])
    h.receive(ANTTestStick.event(.channelClosed, on: 0))
    #expect(h.stick.commandIDs.filter { $0 == 0x4B }.count == opens + 1)
    #expect(h.stick.commands.last?.content == [0])
    #expect(h.ended == nil)
    // Found on the new search: available.
    h.page(ANTPages.heartRate(bpm: 70, count: 1, time: 1024), on: 0, from: Self.heartRate)
    #expect(h.reports(0).last == .available("ANT+ heart rate 4242"))
  }

  @Test func aSensorOutOfRangeIsLostAndFoundAgainWhenItSends() {
    var h = Harness([Self.heartRate])
    h.start()
    h.page(ANTPages.heartRate(bpm: 70, count: 1, time: 1024), on: 0, from: Self.heartRate)
    h.receive(ANTTestStick.event(.rxFail, on: 0))
    #expect(h.reports(0).count == 1, "one missed message is nothing")
    h.receive(ANTTestStick.event(.rxFailGoToSearch, on: 0))
    #expect(
      h.reports(0).last
        == .problem(DeviceProblem(condition: .lost, description: "ANT+ heart rate 4242 out of range; searching again")))
    h.receive(ANTTestStick.event(.rxFailGoToSearch, on: 0))
    #expect(h.reports(0).count == 2, "lost once")
    h.page(ANTPages.heartRate(bpm: 71, count: 9, time: 9000), on: 0, from: Self.heartRate)
    #expect(h.reports(0).last == .available("ANT+ heart rate 4242"))
  }

  @Test func aSilentSensorIsLostAtTheDeadlineItGives() throws {
    var h = Harness([Self.heartRate])
    h.start()
    h.now = 103
    h.page(ANTPages.heartRate(bpm: 70, count: 1, time: 1024), on: 0, from: Self.heartRate)
    #expect(h.link.deadline == 118)
    h.elapse(to: 117.9)
    #expect(h.reports(0).count == 1)
    h.elapse(to: 118)
    #expect(
      h.reports(0).last
        == .problem(DeviceProblem(condition: .lost, description: "ANT+ heart rate 4242 sent nothing for 15 s")))
    #expect(h.link.deadline == nil)
    #expect(h.ended == nil, "the stick stays; the channel searches by itself")
  }

  @Test func heartRatePagesGiveHeartRateRRIntervalsAndBattery() {
    var h = Harness([Self.heartRate])
    h.start()
    h.page(ANTPages.heartRate(bpm: 72, count: 1, time: 1024), on: 0, from: Self.heartRate)
    h.now += 0.25
    h.page(ANTPages.heartRate(bpm: 73, count: 2, time: 1024 + 840), on: 0, from: Self.heartRate)
    h.now += 0.25
    // The toggle flips: page numbers are trusted, and page 7 gives the battery.
    h.page(
      ANTPages.heartRateBattery(percent: 80, count: 2, time: 1024 + 840, bpm: 73, toggle: true), on: 0,
      from: Self.heartRate)
    #expect(h.readings == [.heartRate(bpm: 72), .heartRate(bpm: 73), .rrIntervals([840]), .heartRate(bpm: 73)])
    #expect(
      h.reports(0) == [.available("ANT+ heart rate 4242"), .availableDetail("ANT+ heart rate 4242, battery 80 %")])
  }

  @Test func powerOnlyPagesGivePowerAndCadence() {
    var h = Harness([Self.anyPower])
    h.start()
    let meter = ANTSensor(profile: .bicyclePower, deviceNumber: 31, transmissionType: 5)
    h.page(ANTPages.powerOnly(count: 1, accumulated: 250, watts: 250, rpm: 88), on: 0, from: meter)
    h.now += 0.25
    // Two events since: (250 + 2·230 − 250) / 2 = 230 W on average.
    h.page(ANTPages.powerOnly(count: 3, accumulated: 710, watts: 231, rpm: 90), on: 0, from: meter)
    #expect(
      h.readings == [.power(watts: 250), .cadence(rpm: 88), .power(watts: 230), .cadence(rpm: 90)])
  }

  @Test func aPowerMetersBatteryPageShowsItsStatusAndVoltage() {
    let meter = ANTSensor(profile: .bicyclePower, deviceNumber: 31, transmissionType: 5)
    var h = Harness([meter])
    h.start()
    h.page(ANTPages.powerOnly(count: 1, accumulated: 250, watts: 250, rpm: 88), on: 0, from: meter)
    // Common page 82: status good (2), 3 + 240/256 V.
    h.page([0x52, 0xFF, 0xFF, 0, 0, 0, 0xF0, 0x23], on: 0, from: meter)
    #expect(h.reports(0).last == .availableDetail("ANT+ power meter 31, battery good, 3.94 V"))
  }

  @Test func aRunOfUnusablePagesIsAFaultUntilAGoodOne() {
    let meter = ANTSensor(profile: .bicyclePower, deviceNumber: 31, transmissionType: 5)
    var h = Harness([meter])
    h.start()
    // 60,000 W: no rider's power, five times in a row; then 200 W.
    for count in UInt8(1)...5 {
      h.page(ANTPages.powerOnly(count: count, accumulated: 0, watts: 60000, rpm: 90), on: 0, from: meter)
    }
    let failing = h.reports(0).compactMap { if case .failing(let detail) = $0 { detail } else { nil } }
    #expect(failing.count == 1)
    #expect(failing.first?.hasPrefix("ANT+ power meter 31: 5 unusable pages in a row (ANT+ power 60000 W") == true)
    #expect(h.readings.isEmpty)
    h.page(ANTPages.powerOnly(count: 6, accumulated: 200, watts: 200, rpm: 90), on: 0, from: meter)
    #expect(h.reports(0).last == .recovered("ANT+ power meter 31"))
    #expect(h.readings.contains(.power(watts: 200)))
    #expect(h.ended == nil, "one sensor's fault is not the stick's")
  }

  @Test func speedAndCadenceMessagesGiveWheelSpeedAndCadence() throws {
    let pod = ANTSensor(profile: .speedCadence, deviceNumber: 12, transmissionType: 1)
    var h = Harness([pod])
    var settings = Self.settings([pod])
    settings.wheelCircumference = 2.0
    h.link = ANTStickLink(settings: settings)
    h.start()
    h.page(ANTPages.speedCadence(crankTime: 1024, crank: 10, wheelTime: 1024, wheel: 100), on: 0, from: pod)
    h.now += 1
    // One crank revolution and two wheel revolutions in 1 s.
    h.page(ANTPages.speedCadence(crankTime: 2048, crank: 11, wheelTime: 2048, wheel: 102), on: 0, from: pod)
    let cadence = h.readings.compactMap { if case .cadence(let rpm) = $0 { rpm } else { nil } }
    let speed = h.readings.compactMap { if case .wheelSpeed(let speed, _) = $0 { speed } else { nil } }
    #expect(cadence == [60])
    #expect(speed.count == 1)
    #expect(abs(try #require(speed.first) - 4.0) < 1e-9, "two revolutions of the 2 m wheel set")
  }

  @Test func unreadableMessagesAreCountedNotATrap() {
    var h = Harness([Self.heartRate])
    h.start()
    // A data message two bytes short, and a Startup with no reason byte.
    h.receive(ANTMessage(id: 0x4E, content: [0, 1, 2, 3, 4, 5, 6]))
    h.settle(h.link.skipped(.badChecksum(expected: 1, received: 2)))
    let details = h.actions.compactMap { if case .stick(.availableDetail(let d)) = $0 { d } else { nil } }
    #expect(details.last == "ANT stick, 8 channels; 1 ANT+ sensor(s); 2 unreadable message(s) skipped")
    #expect(h.ended == nil)
    #expect(h.reports(0).isEmpty)
  }

  @Test func aScanOpensChannelZeroInRxScanModeAndListsEachSensorOnce() {
    var h = Harness([])
    h.link = ANTStickLink(settings: Self.settings([Self.heartRate]), mode: .scan)
    h.start()
    #expect(h.stick.commandIDs == [0x4A, 0x4D, 0x46, 0x6E, 0x42, 0x51, 0x45, 0x5B], "no sensor channel")
    #expect(h.stick.commands[5].content == [0, 0, 0, 0, 0], "any device")
    #expect(h.stickAvailable == "ANT stick, 8 channels; scanning")
    let strap = ANTSensor(profile: .heartRate, deviceNumber: 51, transmissionType: 1)
    let pod = ANTSensor(profile: .speedCadence, deviceNumber: 52, transmissionType: 1)
    let other = ANTChannelID(deviceNumber: 53, deviceType: 17, transmissionType: 5)
    // Every message comes on channel 0, whoever sent it.
    for _ in 0..<3 {
      h.page(ANTPages.heartRate(bpm: 70, count: 1, time: 1024), on: 0, from: strap)
      h.page(ANTPages.speedCadence(crankTime: 1, crank: 1, wheelTime: 1, wheel: 1), on: 0, from: pod)
      h.receive(h.stick.broadcast([0x10, 0, 0, 0, 0, 0, 0, 0], on: 0, from: other))
    }
    let found = h.actions.compactMap { if case .found(let sensor) = $0 { sensor } else { nil } }
    #expect(found == [strap, pod], "once each; fitness equipment (17) is no profile read here")
    #expect(h.readings.isEmpty && h.reports(0).isEmpty, "a scan records nothing")
  }

  @Test func aStickWithoutExtendedMessagesCannotScan() {
    var stick = ANTTestStick()
    stick.extendedMessages = false
    var h = Harness([], stick: stick)
    h.link = ANTStickLink(settings: Self.settings([]), mode: .scan)
    h.start()
    #expect(h.ended?.description == "the ANT stick cannot scan: it does not send the sender's channel ID")
  }

  @Test func aPowerOnStartupStillHeldBeforeTheResetsIsTakenInStride() {
    var h = Harness([Self.heartRate])
    _ = h.link.start(now: h.now)
    // The power-on Startup (reason 0) comes first and is taken for the reset's; the reset's
    // own comes while the capabilities are asked for, and starts the configuration again.
    let request = ANTCommand.requestMessage(channel: 0, id: 0x54).bytes
    #expect(h.link.received(ANTMessage(id: 0x6F, content: [0x00]), now: h.now) == [.send(request)])
    h.settle(h.link.received(ANTMessage(id: 0x6F, content: [0x20]), now: h.now))
    #expect(h.ended == nil)
    #expect(h.stickAvailable == "ANT stick, 8 channels; 1 ANT+ sensor(s)")
  }

  @Test func aStickThatRestartsByItselfEndsTheAttempt() {
    var h = Harness([Self.heartRate])
    h.start()
    h.receive(ANTMessage(id: 0x6F, content: [0x02]))
    #expect(h.ended?.description == "the ANT stick restarted by itself (reason 0x2)")
  }
}
