import LinuxSupport
import SensorProtocols
import WorkoutCore

#if canImport(Glibc)
  import Glibc
#endif

/// Where the barometer is and how to read it.
public struct BarometerSettings: DeviceSettings, Hashable {
  /// The I2C bus: its adapter name (found in /sys/class/i2c-dev), a number, or a /dev path.
  public var bus: String
  /// 0x76 (SDO to ground) or 0x77 (SDO to VDDIO).
  public var address: UInt8 = 0x76
  /// Seconds between readings (the chip measures continuously in normal mode; this is how
  /// often the service takes its filtered value).
  public var interval = 1.0
  public var sensor = BMP280Settings.rideLogger
  public var backoff = Backoff(initial: 1, maximum: 30)

  public init(bus: String) { self.bus = bus }
}

/// A BMP280 or BME280 on I2C (Bosch BST-BMP280-DS001, BST-BME280-DS002): checks the chip id,
/// reads its trimming, puts it in normal mode with the logger's oversampling and IIR filter,
/// then posts a compensated reading every `interval`. A missing bus, a missing or wrong chip,
/// or a chip that stops answering is posted once as the barometer's condition, and retried with
/// a doubling backoff: the ride goes on with GPS altitude meanwhile.
public typealias BMP280Source = BoardDevice<BarometerSettings>

extension BoardDevice where Settings == BarometerSettings {
  public convenience init(settings: BarometerSettings) {
    self.init(
      settings: settings, name: "barometer on I2C \"\(settings.bus)\" at 0x\(String(settings.address, radix: 16))",
      device: .barometer, session: BarometerSession.self)
  }
}

/// One connection to the chip: set it up, then read until stopped or until it stops answering.
struct BarometerSession: DeviceSession {
  let settings: BarometerSettings
  let signal: StopSignal

  func run(_ reporter: inout DeviceReporter) throws(DeviceProblem) {
    let (busPath, compensator) = try connect(hasWorked: reporter.hasWorked)
    reporter.available("\(compensator.chip) on \(busPath) at 0x\(String(settings.address, radix: 16))")
    try read(busPath, compensator, sink: reporter.sink)
  }

  /// Finds the bus and the chip and configures it; returns the bus's path.
  private func connect(hasWorked: Bool) throws(DeviceProblem) -> (String, BMP280Compensator) {
    let absent: DeviceStatus.Condition = hasWorked ? .lost : .absent
    guard let bus = I2CDevice.findBus(settings.bus) else {
      let known = I2CDevice.busNames()
      throw DeviceProblem(
        condition: absent,
        description: "no I2C bus \"\(settings.bus)\" (buses: \(known.isEmpty ? "none" : known.joined(separator: ", ")))"
      )
    }
    let device: I2CDevice
    let chip: BMP280Chip
    do {
      device = try I2CDevice(busPath: bus, address: settings.address)
      chip = try BMP280Chip(chipID: try device.readByte(BMP280Register.chipID.rawValue))
    } catch let error as SystemError {
      throw DeviceProblem(
        condition: absent,
        description: "nothing answers at 0x\(String(settings.address, radix: 16)) on \(bus): \(error)")
    } catch {
      throw DeviceProblem(condition: .failing, description: "\(error)")
    }
    do {
      // Soft reset (DS001 §4.3.2) so that no earlier configuration lingers, then wait for the
      // chip to come up and copy its trimming (2 ms).
      try device.writeByte(BMP280Register.reset.rawValue, BMP280Layout.resetCommand)
      usleep(10_000)
      let calibration = try BMP280Calibration(
        registers: try device.readBlock(BMP280Register.calibration.rawValue, count: BMP280Layout.calibrationLength))
      var humidity: BME280HumidityCalibration?
      if chip.hasHumidity {
        humidity = try BME280HumidityCalibration(
          h1: try device.readByte(BMP280Register.humidityH1.rawValue),
          registers: try device.readBlock(
            BMP280Register.humidityCalibration.rawValue, count: BMP280Layout.humidityCalibrationLength))
      }
      for write in try settings.sensor.registerWrites(for: chip) {
        try device.writeByte(write.register.rawValue, write.value)
      }
      // Read the configuration back: a chip that did not take it is not measuring as asked.
      let ctrlMeas = try device.readByte(BMP280Register.ctrlMeas.rawValue)
      guard ctrlMeas == settings.sensor.ctrlMeas else {
        throw DeviceProblem(
          condition: .failing,
          description: "the \(chip) did not take its configuration (ctrl_meas reads 0x\(String(ctrlMeas, radix: 16)))")
      }
      // The first filtered result needs a few measurements (~40 ms each at these settings).
      usleep(UInt32(min(1, settings.sensor.maximumMeasurementTime(for: chip) * 3) * 1e6))
      return (bus, BMP280Compensator(chip: chip, calibration: calibration, humidityCalibration: humidity))
    } catch let problem as DeviceProblem {
      throw problem
    } catch {
      throw DeviceProblem(condition: .failing, description: "setting up the \(chip) on \(bus): \(error)")
    }
  }

  /// Reads until stopped (returns) or until the chip stops answering (throws).
  /// Reads until stopped (returns) or until the chip stops answering (throws). The bus is opened
  /// for each reading, not held: a held /dev/i2c-N pins its adapter (an unplugged USB adapter,
  /// or the test board's i2c-stub, could not go away), and opening is three syscalls a second.
  private func read(_ busPath: String, _ compensator: BMP280Compensator, sink: any InputSink) throws(DeviceProblem) {
    let length = compensator.chip.hasHumidity ? BMP280Layout.dataLengthWithHumidity : BMP280Layout.dataLength
    var skipped = 0
    repeat {
      let burst: [UInt8]
      do {
        let device = try I2CDevice(busPath: busPath, address: settings.address)
        burst = try device.readBlock(BMP280Register.data.rawValue, count: length)
      } catch {
        throw DeviceProblem(condition: .lost, description: "the \(compensator.chip) stopped answering: \(error)")
      }
      do {
        let measurement = try compensator.measurement(burst: burst)
        if let pressure = measurement.pressure {
          sink.post(
            .reading(
              .barometer(
                pressure: pressure, temperature: measurement.temperature, humidity: measurement.humidity)))
          skipped = 0
        }
      } catch {
        // No measurement yet (reset values): normal in the first moments; a chip that never
        // measures is a fault.
        skipped += 1
        if skipped == 10 {
          throw DeviceProblem(
            condition: .failing, description: "the \(compensator.chip) gives no measurements: \(error)")
        }
      }
    } while !signal.wait(seconds: settings.interval)
  }
}
