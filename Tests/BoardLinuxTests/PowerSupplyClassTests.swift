import BoardLinux
import Testing
import WorkoutCore

/// `PowerSupplyClass`: the battery chosen and read from the attribute sets real gauge drivers
/// give (drivers/power/supply: which properties each registers, in the units of
/// Documentation/ABI/testing/sysfs-class-power).
struct PowerSupplyClassTests {
  /// sbs-battery (a Smart Battery on SMBus, as the board VM's): named "sbs-" and its I2C
  /// client; time to empty only as an average (SBS AverageTimeToEmpty, minutes × 60); no scope.
  static let sbs = PowerSupplyAttributes(
    name: "sbs-1-000b",
    values: [
      "type": "Battery", "present": "1", "status": "Discharging", "capacity": "72", "voltage_now": "11100000",
      "current_now": "-1250000", "time_to_empty_avg": "19800",
    ])
  /// bq27xxx ("bq27541-0"): both time-to-empty values; before 5.13 a positive current while
  /// discharging.
  static let bq27xxx = PowerSupplyAttributes(
    name: "bq27541-0",
    values: [
      "type": "Battery", "present": "1", "status": "Discharging", "capacity": "41", "voltage_now": "3712000",
      "current_now": "350000", "time_to_empty_now": "12540", "time_to_empty_avg": "12600",
    ])
  /// max17040 ("battery"): level and voltage only, and an `online` of its own that says nothing
  /// of a charger.
  static let max17040 = PowerSupplyAttributes(
    name: "battery",
    values: ["type": "Battery", "online": "1", "present": "1", "capacity": "57", "voltage_now": "3870000"])
  /// A UPS HAT's CellWise CW2015 ("cw2015-battery"): a current estimated from its time to
  /// empty, always positive, and 0 for "no estimate"; its charger a gpio-charger of type Mains.
  static let cw2015 = PowerSupplyAttributes(
    name: "cw2015-battery",
    values: [
      "type": "Battery", "present": "1", "status": "Discharging", "capacity": "88", "voltage_now": "4012000",
      "current_now": "820000", "time_to_empty_now": "0",
    ])
  static let hatCharger = PowerSupplyAttributes(name: "gpio-charger", values: ["type": "Mains", "online": "0"])
  /// A BLE mouse's battery (hid-input): type Battery, but the peripheral's (scope Device).
  static let mouse = PowerSupplyAttributes(
    name: "hid-f0:1b:6c:12:34:56-battery",
    values: ["type": "Battery", "scope": "Device", "present": "1", "status": "Discharging", "capacity": "40"])

  @Test func sbsBatteryIsReadInTheClassUnits() throws {
    let battery = try #require(try PowerSupplyClass.choose(.auto, among: [Self.mouse, Self.sbs]))
    #expect(battery.name == "sbs-1-000b", "the mouse's battery (scope Device) is not the board's")
    let reading = try PowerSupplyClass.reading(battery, among: [Self.mouse, Self.sbs])
    #expect(
      reading
        == BatteryReading(
          supply: "sbs-1-000b", level: 72, voltage: 11.1, current: -1.25, status: .discharging, timeToEmpty: 19800,
          externalPower: nil))
  }

  @Test func bq27xxxCurrentIsSignedByItsStatusAndItsOwnTimeToEmptyPreferred() throws {
    let reading = try PowerSupplyClass.reading(Self.bq27xxx, among: [Self.bq27xxx])
    #expect(reading.current == -0.35, "a positive current while discharging flows out")
    #expect(reading.timeToEmpty == 12540, "time_to_empty_now before its average")
    #expect(reading.voltage == 3.712)
    var charging = Self.bq27xxx
    charging.values["status"] = "Charging"
    charging.values["current_now"] = "-500000"
    #expect(try PowerSupplyClass.reading(charging, among: []).current == 0.5)
  }

  @Test func max17040GivesLevelAndVoltageAndItsOnlineIsNoCharger() throws {
    let battery = try #require(try PowerSupplyClass.choose(.auto, among: [Self.max17040]))
    let reading = try PowerSupplyClass.reading(battery, among: [Self.max17040])
    #expect(reading == BatteryReading(supply: "battery", level: 57, voltage: 3.87, status: .unknown))
    #expect(reading.externalPower == nil, "no Mains or USB supply to ask")
  }

  @Test func upsHatEstimateOfZeroIsNoEstimateAndItsChargerSaysExternalPower() throws {
    let supplies = [Self.hatCharger, Self.cw2015]
    let battery = try #require(try PowerSupplyClass.choose(.auto, among: supplies))
    var reading = try PowerSupplyClass.reading(battery, among: supplies)
    #expect(reading.timeToEmpty == nil)
    #expect(reading.current == -0.82)
    #expect(reading.externalPower == false)
    #expect(!reading.onCharger)
    var plugged = Self.hatCharger
    plugged.values["online"] = "1"
    reading = try PowerSupplyClass.reading(battery, among: [plugged, Self.cw2015])
    #expect(reading.externalPower == true)
    #expect(reading.onCharger)
  }

  @Test func sbsNotDischargingTimeIsNoEstimate() throws {
    var full = Self.sbs
    full.values["status"] = "Full"
    full.values["time_to_empty_avg"] = String(65535 * 60)
    let reading = try PowerSupplyClass.reading(full, among: [full])
    #expect(reading.timeToEmpty == nil)
    #expect(reading.status == .full)
    full.values["status"] = "Not charging"
    #expect(try PowerSupplyClass.reading(full, among: []).status == .notCharging)
    full.values["status"] = "Overcharged-ish"
    #expect(try PowerSupplyClass.reading(full, among: []).status == .unknown, "a word of a newer kernel")
  }

  @Test func aBoardWithoutABatteryHasNoneToRead() throws {
    let mains = PowerSupplyAttributes(name: "AC", values: ["type": "Mains", "online": "1"])
    var emptySlot = Self.sbs
    emptySlot.values["present"] = "0"
    #expect(try PowerSupplyClass.choose(.auto, among: []) == nil)
    #expect(try PowerSupplyClass.choose(.auto, among: [mains, Self.mouse, emptySlot]) == nil)
  }

  @Test func aNamedSupplyIsThatOneOrItsProblem() throws {
    let mains = PowerSupplyAttributes(name: "AC", values: ["type": "Mains", "online": "1"])
    let supplies = [mains, Self.mouse, Self.bq27xxx]
    #expect(try PowerSupplyClass.choose(.named("bq27541-0"), among: supplies)?.name == "bq27541-0")
    #expect(try PowerSupplyClass.choose(.named("hid-f0:1b:6c:12:34:56-battery"), among: supplies) != nil)
    #expect(
      throws: PowerSupplyProblem(
        condition: .absent,
        description: "no power supply \"BAT0\" (there: AC, bq27541-0, hid-f0:1b:6c:12:34:56-battery)")
    ) { try PowerSupplyClass.choose(.named("BAT0"), among: supplies) }
    #expect(
      throws: PowerSupplyProblem(
        condition: .failing, description: "the power supply \"AC\" is of type Mains, not a Battery")
    ) { try PowerSupplyClass.choose(.named("AC"), among: supplies) }
    var out = Self.bq27xxx
    out.values["present"] = "0"
    #expect(throws: PowerSupplyProblem(condition: .absent, description: "bq27541-0 says no battery is present")) {
      try PowerSupplyClass.choose(.named("bq27541-0"), among: [out])
    }
  }

  @Test func malformedValuesAreTheBatterysFailingCondition() {
    var battery = Self.sbs
    battery.values["capacity"] = "abc"
    #expect(
      throws: PowerSupplyProblem(
        condition: .failing, description: "sbs-1-000b: capacity reads \"abc\", not a whole number")
    ) { try PowerSupplyClass.reading(battery, among: []) }
    battery.values["capacity"] = "250"
    #expect(
      throws: PowerSupplyProblem(condition: .failing, description: "sbs-1-000b: capacity reads 250 %, outside 0 to 100")
    ) { try PowerSupplyClass.reading(battery, among: []) }
    battery.values["capacity"] = "50"
    battery.values["voltage_now"] = "3.7"
    #expect(
      throws: PowerSupplyProblem(
        condition: .failing, description: "sbs-1-000b: voltage_now reads \"3.7\", not a whole number")
    ) { try PowerSupplyClass.reading(battery, among: []) }
    battery.values["voltage_now"] = nil
    battery.values["capacity"] = nil
    battery.unreadable["capacity"] = "Input/output error"
    #expect(
      throws: PowerSupplyProblem(
        condition: .failing, description: "sbs-1-000b: cannot read capacity: Input/output error")
    ) { try PowerSupplyClass.reading(battery, among: []) }
  }
}
