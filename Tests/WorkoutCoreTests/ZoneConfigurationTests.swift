import Testing

@testable import WorkoutCore

/// HealthKit's workout-zone rules, each refused with the rule named; the system zones' math.
struct ZoneConfigurationTests {
  func zones(_ pairs: [(Double, Double?)]) -> [Zone] { pairs.map { Zone(lower: $0.0, upper: $0.1) } }

  @Test func fiveContiguousZonesOpenAtBothEndsAreAccepted() throws {
    let config = try ZoneConfiguration(
      quantity: .heartRate, source: .user,
      zones: zones([(0, 120), (120, 140), (140, 160), (160, 175), (175, nil)]))
    #expect(config.zones.count == 5)
    #expect(config.text == "0-120,120-140,140-160,160-175,175- bpm")
  }

  @Test func threeToNineZones() throws {
    for count in 1...11 {
      let boundaries = (1..<count).map { Double($0 * 50) }
      let made = Result { () throws(ZoneConfigurationError) in
        try ZoneConfiguration(quantity: .cyclingPower, source: .user, boundaries: boundaries)
      }
      if (3...9).contains(count) {
        #expect((try? made.get())?.zones.count == count)
      } else {
        #expect(throws: ZoneConfigurationError.zoneCount(count)) { try made.get() }
      }
    }
    #expect(ZoneConfigurationError.zoneCount(2).description == "a zone configuration has 3 to 9 zones, not 2")
  }

  @Test func everyRuleIsRefusedByName() {
    func refused(_ pairs: [(Double, Double?)], unit: String? = nil) -> ZoneConfigurationError? {
      do {
        _ = try ZoneConfiguration(quantity: .heartRate, source: .custom, zones: zones(pairs), unit: unit)
        return nil
      } catch { return error }
    }
    #expect(refused([(60, 120), (120, 140), (140, nil)]) == .firstNotOpenBelow(60))
    #expect(refused([(0, 120), (120, 140), (140, 200)]) == .lastNotOpenAbove(200))
    #expect(refused([(0, 120), (120, nil), (140, nil)]) == .openAboveBeforeTheLast(zone: 2))
    #expect(refused([(0, 120), (130, 140), (140, nil)]) == .notContiguous(zone: 2, previousUpper: 120, lower: 130))
    #expect(refused([(0, 130), (120, 140), (140, nil)]) == .notContiguous(zone: 2, previousUpper: 130, lower: 120))
    #expect(refused([(0, 120), (120, 120), (120, nil)]) == .empty(zone: 2, lower: 120, upper: 120))
    #expect(refused([(0, 140), (140, 120), (120, nil)]) == .empty(zone: 2, lower: 140, upper: 120))
    #expect(refused([(0, .nan), (120, 140), (140, nil)]) == .notANumber(zone: 1))
    #expect(refused([(0, 120), (120, 140), (140, nil)], unit: "W") == .unit(given: "W", quantity: .heartRate))
    #expect(refused([(0, 120), (120, 140), (140, nil)], unit: "bpm") == nil)
    let texts = [
      ZoneConfigurationError.firstNotOpenBelow(60).description,
      ZoneConfigurationError.notContiguous(zone: 2, previousUpper: 120, lower: 130).description,
      ZoneConfigurationError.unit(given: "W", quantity: .heartRate).description,
    ]
    #expect(texts[0] == "the first zone must be open below (start at 0), not at 60")
    #expect(texts[1] == "zones must be contiguous and not overlap: zone 1 ends at 120 but zone 2 starts at 130")
    #expect(texts[2] == "boundaries of heartRate zones are in count/min, not W")
  }

  @Test func aRiderWritesZonesOrBoundaries() throws {
    let listed = try ZoneConfiguration(
      parsing: "0-120, 120-140,140-160,160-175,175- bpm", quantity: .heartRate, source: .custom)
    let bounded = try ZoneConfiguration(parsing: "120,140,160,175", quantity: .heartRate, source: .custom)
    #expect(listed == bounded)
    #expect(try ZoneConfiguration(parsing: listed.text, quantity: .heartRate, source: .custom) == listed)
    let power = try ZoneConfiguration(parsing: "0-140,140-190,190-228,228- W", quantity: .cyclingPower, source: .user)
    #expect(power.zones.last == Zone(lower: 228, upper: nil))
    #expect(throws: ZoneConfigurationError.unit(given: "bpm", quantity: .cyclingPower)) {
      try ZoneConfiguration(parsing: "100,200 bpm", quantity: .cyclingPower, source: .user)
    }
    #expect(throws: ZoneConfigurationError.self) {
      try ZoneConfiguration(parsing: "120,,140", quantity: .heartRate, source: .user)
    }
    #expect(throws: ZoneConfigurationError.self) {
      try ZoneConfiguration(parsing: "120,abc,140", quantity: .heartRate, source: .user)
    }
    #expect(throws: ZoneConfigurationError.zoneCount(2)) {
      try ZoneConfiguration(parsing: "150", quantity: .heartRate, source: .user)
    }
  }

  @Test func aValueAtABoundaryIsInTheZoneAboveIt() throws {
    let config = try ZoneConfiguration(quantity: .heartRate, source: .user, boundaries: [120, 140, 160, 175])
    #expect(config.zoneIndex(of: 0) == 0)
    #expect(config.zoneIndex(of: 119.999) == 0)
    #expect(config.zoneIndex(of: 120) == 1)
    #expect(config.zoneIndex(of: 174.9) == 3)
    #expect(config.zoneIndex(of: 175) == 4)
    #expect(config.zoneIndex(of: 240) == 4)
    #expect(config.zoneIndex(of: -5) == 0)
  }

  @Test func systemHeartRateZonesAreKarvonenOnTanaka() throws {
    // Age 40: Tanaka 208 − 28 = 180; resting 60: reserve 120; 60/70/80/90 % → 132, 144, 156, 168.
    #expect(SystemZones.tanakaMaximumHeartRate(age: 40) == 180)
    let zones = try SystemZones.heartRate(age: 40, resting: 60)
    #expect(zones.source == .system)
    #expect(zones.zones.map(\.lower) == [0, 132, 144, 156, 168])
    let measured = try SystemZones.heartRate(age: 40, resting: 50, maximum: 190)
    #expect(measured.zones.map(\.lower) == [0, 134, 148, 162, 176])
    #expect(throws: ZoneConfigurationError.self) { try SystemZones.heartRate(age: 40, resting: 190) }
  }

  @Test func systemPowerZonesFromFTP() throws {
    let six = try SystemZones.power(ftp: 250)
    #expect(six.zones.map(\.lower) == [0, 140, 190, 228, 265, 303])
    let coggan = try SystemZones.power(ftp: 250, model: .coggan)
    #expect(coggan.zones.count == 7)
    #expect(coggan.zones.map(\.lower) == [0, 140, 190, 228, 265, 303, 378])
    // Coggan's "≤ 55 %" holds 55 % of FTP in level 1.
    #expect(coggan.zoneIndex(of: 0.55 * 250) == 0)
    #expect(coggan.zoneIndex(of: 0.56 * 250) == 1)
    #expect(throws: ZoneConfigurationError.self) { try SystemZones.power(ftp: 0) }
  }
}
