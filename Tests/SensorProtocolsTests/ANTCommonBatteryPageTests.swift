import Testing

@testable import SensorProtocols

@Suite("ANT+ Common Page 82, battery status")
struct ANTCommonBatteryPageTests {
  @Test func decodesThePage() throws {
    // Byte 2 0x21: 1 battery, identifier 2. Time 16 units; byte 7 0xA3: bit 7 (2 s units),
    // status 2 (good), coarse 3 V; 0x80/256 = 0.5 V more.
    let page = try ANTCommonBatteryPage(payload: [0x52, 0xFF, 0x21, 0x10, 0x00, 0x00, 0x80, 0xA3])
    #expect(page.batteryCount == 1 && page.batteryIdentifier == 2 && page.operatingTimeSeconds == 32)
    #expect(page.battery.voltage == 3.5 && page.battery.status == .good && page.battery.percent == nil)
    // Bit 7 clear: 16 s units; 0x010000 units is 1,048,576 s. Status 1 (new), coarse 2, 0x40 = 0.25 V.
    let sixteen = try ANTCommonBatteryPage(payload: [0x52, 0xFF, 0x11, 0x00, 0x00, 0x01, 0x40, 0x12])
    #expect(
      sixteen.operatingTimeSeconds == 1_048_576 && sixteen.battery.status == .new && sixteen.battery.voltage == 2.25)
    // Every status.
    for (bits, level) in [(3, ANTBatteryStatus.Level.ok), (4, .low), (5, .critical), (7, .invalid)] {
      let p = try ANTCommonBatteryPage(payload: [0x52, 0xFF, 0xFF, 0, 0, 0, 0, UInt8(bits << 4 | 3)])
      #expect(p.battery.status == level)
    }
    #expect(try ANTCommonBatteryPage(payload: [0x52, 0xFF, 0xFF, 0, 0, 0, 0, 0x63]).battery.status == nil)
  }

  @Test func invalidFields() throws {
    let page = try ANTCommonBatteryPage(payload: [0x52, 0xFF, 0xFF, 0, 0, 0, 0xFF, 0x7F])
    #expect(page.batteryCount == nil && page.batteryIdentifier == nil)
    #expect(page.battery.voltage == nil && page.battery.status == .invalid)
  }

  @Test func refusesOtherPagesAndShortOnes() {
    #expect(throws: ANTDecodeError.notPage(0x52, received: 0x10)) {
      try ANTCommonBatteryPage(payload: [0x10, 0, 0, 0, 0, 0, 0, 0])
    }
    #expect(throws: ANTDecodeError.truncated(id: 0, needed: 8, available: 2)) {
      try ANTCommonBatteryPage(payload: [0x52, 0xFF])
    }
  }

  @Test func everyProfileReportsIt() throws {
    let page: [UInt8] = [0x52, 0xFF, 0x11, 0x10, 0, 0, 0x80, 0xA3]
    var power = ANTPowerReadings()
    #expect(try power.update(page, at: 0).batteryStatus?.voltage == 3.5)
    // Paged profiles read it once the toggle has flipped.
    var heart = ANTHeartRateReadings()
    _ = try heart.update([0x00, 0xFF, 0xFF, 0xFF, 0, 0, 0, 60], at: 0)
    #expect(try heart.update([0xD2] + page.dropFirst(), at: 0.25).batteryStatus?.status == .good)
    var speed = ANTBikeSensorReadings(type: .speed)
    _ = try speed.update([0x00, 0xFF, 0xFF, 0xFF, 0, 0, 0, 0], at: 0)
    #expect(try speed.update([0xD2] + page.dropFirst(), at: 0.25).batteryStatus?.voltage == 3.5)
    // The heart-rate profile's own page 7 gives the percent as well.
    #expect(try heart.update([0x87, 64, 0x80, 0x23, 0, 0, 0, 60], at: 0.5).batteryStatus?.percent == 64)
  }
}
